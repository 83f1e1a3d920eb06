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


def test_every_operation_answers_with_the_model_it_names() -> None:
    """The table names its answers (looked up on first use); a name that matches no model
    would only fail when that operation is first called."""
    from pydantic import BaseModel

    from hz_kernel.operations import OPERATIONS

    for operation in OPERATIONS.values():
        answer = operation.response
        assert issubclass(answer, BaseModel) and answer.__name__ == operation.answer


#: Modules a cockpit's first frame must not wait for: every answer model of the interface,
#: the kernel itself (opened after the frame), the review desk's diff code.
_NOT_BEFORE_THE_FIRST_FRAME = ("hz_kernel.api", "hz_kernel.kernel", "hz_tui.review")

_FIRST_FRAME = """
import asyncio, os, sys
from hz_tui.entry import prepare_process
prepare_process()
from hz_kernel.connect import connect
from hz_kernel.home import Home
from hz_tui.app import CockpitApp

home = Home.resolve(sys.argv[1])
client = asyncio.run(connect(home, defer_kernel=True))
app = CockpitApp(home, client, live=False)
said_drawn = app.first_frame_drawn

def drawn():
    print(sorted(name for name in sys.argv[2:] if name in sys.modules), flush=True)
    os._exit(0)

app.first_frame_drawn = drawn
app.run(headless=True, size=(120, 40))
"""


def test_the_cockpit_draws_its_first_frame_before_loading_the_interface(tmp_path: Path) -> None:
    """Issue 14 (cold start): the first frame needs the rows (``hz_kernel.overview``) and the
    operations table, not every answer model nor the kernel: those load after it."""
    import asyncio

    from hz_kernel.home import Home
    from hz_kernel.kernel import Kernel

    home = Home.resolve(tmp_path / "home", create=True)

    async def index() -> None:  # as any home a kernel has opened once: its index is current
        await (await Kernel.open(home)).close()

    asyncio.run(index())
    drawn = subprocess.run(
        [sys.executable, "-c", _FIRST_FRAME, str(home.root), *_NOT_BEFORE_THE_FIRST_FRAME],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert drawn.stdout.strip() == "[]", drawn.stdout + drawn.stderr


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
