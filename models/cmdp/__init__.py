"""Online constrained MDPs by model-based primal-dual learning, and the latency-budget controller built on it.

`tabular` holds finite-horizon CMDPs (exact evaluation, LP optimum), `primal_dual` the learner (optimistic
reward, pessimistic cost, dual ascent, budget tightening), `pipeline_model` the CMDP of Foresight's live
pipeline knobs (sample rate and model tier), `controller` the online controller the live spine consults
(`pipelines/spine/budget.py`). The experiment that checks the paper's claim is `training/methods/cmdp/`; see
docs/training/cmdp.md.
"""
