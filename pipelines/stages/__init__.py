"""The per-second stages (speech, audio, visual, parser, grounding, safety), their config and the record they fill."""
