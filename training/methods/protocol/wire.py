"""What crosses a stage boundary, as bytes: tensors are packed into a compact binary message here, and the
message length is what the experiment counts, in both directions.

`BoundaryCodec("full")` sends the residual stream itself (d float32 per token) and receives a d-dim gradient;
`BoundaryCodec("ssn")` sends k float32 coordinates plus the uint16 token ids and receives a k-dim gradient.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import torch

from training.methods.protocol.subspace import Subspace

DTYPES = (np.dtype("<f4"), np.dtype("<u2"), np.dtype("<i8"))


def pack(tensors: Sequence[torch.Tensor | np.ndarray]) -> bytes:
    """Tensors as one message: per tensor a dtype code, rank and shape (uint32), then its raw little-endian data."""
    parts = [struct.pack("<B", len(tensors))]
    for t in tensors:
        a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        code = next(i for i, dt in enumerate(DTYPES) if a.dtype == dt)
        parts.append(struct.pack(f"<BB{a.ndim}I", code, a.ndim, *a.shape))
        parts.append(np.ascontiguousarray(a).tobytes())
    return b"".join(parts)


def unpack(data: bytes) -> list[torch.Tensor]:
    """The tensors of a `pack` message (integer ids come back as int64, ready for indexing)."""
    (count,), pos, out = struct.unpack_from("<B", data), 1, []
    for _ in range(count):
        code, ndim = struct.unpack_from("<BB", data, pos)
        shape = struct.unpack_from(f"<{ndim}I", data, pos + 2)
        pos += 2 + 4 * ndim
        dtype = DTYPES[code]
        n = int(np.prod(shape)) * dtype.itemsize
        a = np.frombuffer(data, dtype=dtype, count=int(np.prod(shape)), offset=pos).reshape(shape)
        pos += n
        out.append(torch.from_numpy(a.astype(np.int64) if dtype.kind in "ui" else a.copy()))
    return out


class BoundaryCodec:
    """Both ends of one stage boundary. The sender keeps the tensor it sent (still on its autograd graph) and
    the receiver the leaf it rebuilt from, so the gradient message runs the same path backwards."""

    def __init__(self, subspace: Subspace | None):
        self.subspace = subspace

    def encode(self, x: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, bytes]:
        if self.subspace is None:
            return x, pack([x])
        coords = self.subspace.encode(x, tokens)
        return coords, pack([coords, tokens.to(torch.int32).numpy().astype("<u2")])

    def decode(self, payload: bytes) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(leaf that receives the gradient, rebuilt residual stream, token ids or None)."""
        tensors = unpack(payload)
        leaf = tensors[0].requires_grad_(True)
        if self.subspace is None:
            return leaf, leaf, None
        tokens = tensors[1]
        return leaf, self.subspace.decode(leaf, tokens), tokens
