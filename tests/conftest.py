"""Shared fixtures: a throwaway hz home and a kernel on it.

``hypothesis`` is imported here, at collection, because its pytest plugin
otherwise imports it while printing the summary, and on CPython 3.11.7 that
late compile can fail with "AST constructor recursion depth mismatch" after
tests that cancel asyncio tasks — a failed run with every test passed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import hypothesis  # noqa: F401  (see below)
import pytest

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel


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
