"""Protocol Models / Subspace Networks: pipeline-parallel training whose stages exchange k << d numbers a token.

See docs/training/protocol.md. `subspace` holds the fixed seeded basis and the layers that keep the residual
stream inside it, `model` the transformer cut into stages, `wire` the byte-level codecs of a stage boundary,
`actors` the Ray stage workers and the driver, `recipe` the optimizer every stage builds, `evaluate` validation
with and without post-hoc projection.
"""
