"""SPiCE: a symmetry-preserving network over conformer ensembles (see docs/training/spice.md).

`conformers` makes RDKit ensembles and Boltzmann-averaged targets, `layers` the equivariant building
blocks (PaiNN block, equivariant layer norm, GIN, within-conformer cross-attention), `moe` the geometric
mixture of experts, `model` the network, `train` fitting and the symmetry check, `experiment` the
miniature comparison with a single-conformer model.
"""
