"""The layering is part of the design: import-linter's contracts must hold."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is part of the test extra"
    result = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_kernel_model_builds_its_schema_on_first_use() -> None:
    """Schemas built at import would cost every ``hz`` command and the cockpit's start."""
    import importlib
    import pkgutil

    from pydantic import BaseModel

    import hz_kernel

    for module in pkgutil.walk_packages(hz_kernel.__path__, "hz_kernel."):
        importlib.import_module(module.name)
    eager = [
        f"{model.__module__}.{model.__qualname__}"
        for model in _subclasses(BaseModel)
        if model.__module__.startswith("hz_kernel.")
        and not model.model_config.get("defer_build")
        and "[" not in model.__qualname__
    ]
    assert eager == []


def _subclasses(root: type) -> list[type]:
    found, todo = [], [root]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


_WALL_CLOCK_READS = {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("time", "time"),
    ("time", "localtime"),
    ("time", "gmtime"),
}
#: Reads of the real clock that must stay real: a latency probe compares
#: its stamp with the reader's own ``time.time_ns``.
_WALL_CLOCK_ALLOWED = {"hz_kernel/clock.py", "hz_kernel/daemon/app.py"}


def test_every_instant_comes_from_the_kernels_clock() -> None:
    """Issue 12 item 1: one clock (``hz_kernel.clock``), so a pinned or moved clock reaches all."""
    import ast

    offenders = []
    for package in ("hz_kernel", "hz_tui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in _WALL_CLOCK_ALLOWED:
                continue
            for node in ast.walk(ast.parse(path.read_text(), relative)):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and (node.func.value.id, node.func.attr.removesuffix("_ns"))
                    in _WALL_CLOCK_READS
                ):
                    offenders.append(f"{relative}:{node.lineno}")
    assert offenders == []
