"""The safety monitor's evaluation harness: PaSBench-style replay, perturbation, metrics, fitting the risk gate
(`foresight eval safety`, `python -m training.safety.fit_gate`)."""
