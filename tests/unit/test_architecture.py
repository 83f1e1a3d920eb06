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
