"""Shared fixtures: a throwaway hz home and a kernel on it.

``hypothesis`` is imported here, at collection, because its pytest plugin
otherwise imports it while printing the summary, and on CPython 3.11.7 that
late compile can fail with "AST constructor recursion depth mismatch" after
tests that cancel asyncio tasks — a failed run with every test passed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import hypothesis  # noqa: F401  (see below)
import psutil
import pytest
from time_machine import TimeMachineFixture

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel

#: The CLI the tests run stays embedded: hundreds of commands must not each start a daemon.
#: The tests of the daemon-by-default promise drop it (``tests/e2e/test_daemon_by_default_e2e.py``).
os.environ["HZ_EMBEDDED"] = "1"

#: A run started in the background (``nohup … &``) inherits SIGINT ignored, and every hz the
#: tests start would inherit that too: the tests that send a real Ctrl-C would wait for an exit
#: that never comes. Handled here, SIGINT is back at its default in each program started.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: Where a pinned clock starts: a Monday morning, before every slot the tests tick.
PINNED_START = "2026-11-30T08:00:00Z"


@pytest.fixture(scope="session", autouse=True)
def no_daemon_outlives_the_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Stop every daemon still serving a home under this run's temporary folders at its end.

    Each test stops the daemons it starts; this is the net under a test that
    failed before its teardown could, so a run never leaves processes behind.
    """
    yield
    base = str(tmp_path_factory.getbasetemp())
    left = [
        process
        for process in psutil.process_iter(["cmdline"])
        if _serves_a_home_under(process.info["cmdline"] or [], base)
    ]
    for process in left:
        process.terminate()
    _, alive = psutil.wait_procs(left, timeout=10)
    for process in alive:
        process.kill()


def _serves_a_home_under(cmdline: list[str], base: str) -> bool:
    if "--foreground" not in cmdline or "--home" not in cmdline:
        return False
    at = cmdline.index("--home") + 1
    return at < len(cmdline) and cmdline[at].startswith(base)


@pytest.fixture
def clock(time_machine: TimeMachineFixture) -> TimeMachineFixture:
    """The kernel's clock pinned for everything a test creates; ``clock.move_to`` moves it.

    The clock still ticks from where it is put, so nothing that waits on time stalls.
    """
    time_machine.move_to(PINNED_START)
    return time_machine


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    root = tmp_path / "home"
    monkeypatch.setenv("HZ_HOME", str(root))
    monkeypatch.delenv("HZ_NOW", raising=False)
    monkeypatch.delenv("HZ_CRASH_AT", raising=False)
    return Home.resolve(root, create=True)


@pytest.fixture
async def kernel(home: Home) -> AsyncIterator[Kernel]:
    k = await Kernel.open(home)
    try:
        yield k
    finally:
        await k.close()
