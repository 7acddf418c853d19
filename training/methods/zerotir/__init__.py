"""ZeroTIR (Mai, Xu et al., NeurIPS 2025): tool-integrated reasoning learned from outcome reward alone.

An isolated executor for untrusted programs (`executor`, `sandbox_worker`), a small policy that writes
programs over a stream's stored events and transcript (`policy`, `programs`, `rollout`), its GRPO
training (`grpo`), and the agent that answers questions about a stored stream with it (`agent`).
"""
