"""What the default output gets right on real recordings: `foresight eval perception` (`report.py`, `cli.py`)."""
