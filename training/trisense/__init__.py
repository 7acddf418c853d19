"""Data loaders, synthetic corpus, training and evaluation for the TriSense-style grounder."""
