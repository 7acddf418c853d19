"""The 16 NeurIPS-2025 methods in miniature, one package each (`<name>/experiment.py`), and the one runner
that finds and runs them (`runner.py`: `foresight train <name>`, `foresight eval training`)."""
