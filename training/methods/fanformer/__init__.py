"""FANformer (Dong et al., 2025): Fourier pre-projection before attention; the layer lives in models.layers.fan."""
