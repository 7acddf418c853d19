"""Read files out of Qt resource bundles (`.rcc`), the form Debian's `gcompris-qt-data` ships its media in.

The binary format (Qt's `rcc`, versions 1-3) is: a header (`qres`, version, tree, data and names offsets,
and from version 3 a flags word), a tree of fixed-size nodes (name offset, flags, then either child count and
first child or locale and data offset; versions >= 2 add a modification time), a names table (length, hash,
UTF-16BE characters) and a data table (length-prefixed payloads, zlib-compressed with Qt's 4-byte size prefix
or zstd-compressed when the node's flags say so). Reading it directly avoids a Qt dependency.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

COMPRESSED, DIRECTORY, COMPRESSED_ZSTD = 0x1, 0x2, 0x4


class RccError(ValueError):
    """The file is not a Qt resource bundle this reader understands."""


class RccArchive:
    """The files of one `.rcc` bundle by their resource path (e.g. `gcompris/src/activities/x/resource/a.ogg`)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.blob = self.path.read_bytes()
        if self.blob[:4] != b"qres":
            raise RccError(f"{self.path} is not a Qt resource bundle")
        self.version, self.tree, self.data, self.names = struct.unpack(">IIII", self.blob[4:20])
        if self.version not in (1, 2, 3):
            raise RccError(f"{self.path}: unsupported rcc version {self.version}")
        self.node_size = 14 if self.version == 1 else 22

    def _name(self, offset: int) -> str:
        at = self.names + offset
        (length,) = struct.unpack(">H", self.blob[at:at + 2])
        return self.blob[at + 6:at + 6 + 2 * length].decode("utf-16-be")

    def _node(self, index: int) -> tuple[str, int, int, int]:
        at = self.tree + index * self.node_size
        name_off, flags, a, b = struct.unpack(">IHII", self.blob[at:at + 14])
        return self._name(name_off) if index else "", flags, a, b

    def _payload(self, offset: int, flags: int) -> bytes:
        at = self.data + offset
        (size,) = struct.unpack(">I", self.blob[at:at + 4])
        raw = self.blob[at + 4:at + 4 + size]
        if flags & COMPRESSED:
            return zlib.decompress(raw[4:])  # qCompress prefixes the uncompressed length
        if flags & COMPRESSED_ZSTD:
            import zstandard

            return zstandard.ZstdDecompressor().decompress(raw)
        return raw

    def entries(self) -> Iterator[tuple[str, int, int]]:
        """(path, flags, data offset) of every file, depth first."""
        stack = [("", 0)]
        while stack:
            prefix, index = stack.pop()
            name, flags, a, b = self._node(index)
            path = f"{prefix}/{name}" if prefix else name
            if flags & DIRECTORY:
                stack += [(path, b + k) for k in range(a)]
            else:  # a file node: (country, language) packed in a, its data offset in b
                yield path, flags, b

    def files(self) -> dict[str, tuple[int, int]]:
        return {path: (flags, offset) for path, flags, offset in self.entries()}

    def read(self, path: str) -> bytes:
        flags, offset = self.files()[path]
        return self._payload(offset, flags)
