"""Fair representations by matching characteristic functions across groups (Sinigaglia et al., NeurIPS 2025)."""
