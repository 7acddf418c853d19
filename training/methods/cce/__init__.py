"""Collective counterfactual explanations by unbalanced optimal transport (Ehyaei, Shirali, Samadi, NeurIPS 2025)."""
