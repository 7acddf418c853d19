"""The layout's rules: imports point down the data flow, and no module outgrows 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "pipelines", "models", "ui", "training", "benchmarks", "scripts")


def imports(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside functions."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def sources(*folders: str) -> list[Path]:
    return [p for f in folders for p in sorted((ROOT / f).rglob("*.py"))]


def offenders(folders: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return [f"{p.relative_to(ROOT)} imports {m}" for p in sources(*folders) for m in sorted(imports(p))
            if any(m == f or m.startswith(f + ".") for f in forbidden)]


def test_imports_point_down_the_data_flow():
    assert offenders(("models",), ("pipelines", "app", "ui", "training", "tests")) == []
    assert offenders(("pipelines",), ("app", "ui", "training", "tests")) == []
    assert offenders(("app", "training"), ("ui", "tests")) == []
    assert offenders(("ui",), ("app.api", "tests")) == []
    assert offenders(("benchmarks",), ("tests",)) == []
    assert imports(ROOT / "models" / "errors.py") <= {"__future__"}


def test_no_module_over_400_lines():
    long = [f"{p.relative_to(ROOT)}: {n}" for p in sources(*PACKAGES)
            if (n := len(p.read_text().splitlines())) > 400]
    assert long == []
