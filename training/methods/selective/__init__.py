"""Selective learning for time-series forecasting (Fu et al., NeurIPS 2025): masked MSE on trustworthy steps."""
