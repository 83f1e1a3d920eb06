"""Fixtures for the tick's integration tests: a real world (home, documents root, sources)."""

from __future__ import annotations

from pathlib import Path

import pytest
from time_machine import TimeMachineFixture

from tests.support.homes import World, make_world


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: TimeMachineFixture) -> World:
    """A world made at the pinned clock (``clock``), so every slot a test ticks lies after it."""
    for name in ("HZ_NOW", "HZ_CRASH_AT", "HZ_TICK_SECONDS", "HZ_MODEL_DELAY_MS"):
        monkeypatch.delenv(name, raising=False)
    world = make_world(tmp_path)
    monkeypatch.setenv("HZ_HOME", str(world.home))
    return world
