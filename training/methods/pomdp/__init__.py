"""Multi-environment and adversarial-belief POMDPs, and the safety monitor's robust escalation policy.

See docs/training/pomdp.md. `model` holds POMDPs, ME-POMDPs and the product reduction, `solvers` exact
and point-based value iteration, `plans` executable plans and their exact scoring, `robust` the LPs and the
AB-style point-based loop, `problems` multi-environment Tiger and the escalation model, `gate_sensors`
the measurement of the risk gate as a sensor, `escalation` the policy file the monitor loads.
"""
