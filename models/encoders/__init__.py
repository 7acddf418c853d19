"""Per-second perception: feature vectors per modality and readable detections, behind one registry."""
