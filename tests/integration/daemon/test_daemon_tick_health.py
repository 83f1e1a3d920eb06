"""Issue 12 item 12: the daemon never stops working because of one bad thing, and says when it does.

One heinzel that fails leaves the daemon's tick loop running for every
other heinzel; and ``hz daemon status`` (``GET /v1/health``) reports a
tick that has not finished within two intervals as unhealthy (``HZD070``)
instead of "running".
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import Daemons

from tests.support.faults import (
    SLOT_DUE_AT,
    eventually,
    hourly_digest,
    listed,
    source_cache_is_a_file,
    turns_dir_is_a_file,
)
from tests.support.homes import World, make_world


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _start(world: World, daemons: Daemons, **env: str) -> None:
    started = world.hz("daemon", "start", "--json", **env)
    daemons.track(json.loads(started.stdout)["pid"])


def _status(world: World) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    result = world.hz("daemon", "status", "--json", check=False)
    return result, json.loads(result.stdout)


def test_a_failing_heinzel_leaves_the_daemon_ticking_for_the_others(
    world: World, daemons: Daemons
) -> None:
    """Issue 12 item 12: the daemon's tick loop outlives a heinzel whose turn cannot run."""
    broken = hourly_digest(world, "a-broken")  # sorts first: tried before the other
    hourly_digest(world, "b-fine")
    turns_dir_is_a_file(world, broken)
    _start(world, daemons, HZ_NOW=SLOT_DUE_AT, HZ_TICK_SECONDS="0.3")
    try:
        rows = eventually(
            lambda: (
                found
                if (found := listed(world))["a-broken"]["failure"]
                and found["b-fine"]["last_disposition"]
                else None
            ),
            "a-broken recorded as failing and b-fine's turn run",
        )
        assert rows["b-fine"]["failure"] is None
        ticks = _status(world)[1]["ticks"]
        eventually(lambda: _status(world)[1]["ticks"] > ticks, "another tick after the failure")
        result, health = _status(world)
        assert result.returncode == 0, result.stderr
        assert health["healthy"] is True
    finally:
        world.hz("daemon", "stop", check=False)


def test_a_tick_stuck_for_two_intervals_makes_the_daemon_unhealthy(
    world: World, daemons: Daemons
) -> None:
    """Issue 12 item 12: a daemon whose tick does not come round is reported, not "running"."""
    hourly_digest(world, "slow")
    # The tick runs the due turn with every model chunk held 5 s: the loop is stuck in it.
    _start(world, daemons, HZ_NOW=SLOT_DUE_AT, HZ_TICK_SECONDS="0.3", HZ_MODEL_DELAY_MS="5000")
    try:
        result, health = eventually(
            lambda: found if (found := _status(world))[1]["healthy"] is False else None,
            "the daemon reports its tick as stale",
        )
        assert result.returncode == 1
        assert health["running"] is True
        assert health["tick_age_s"] > 2 * health["tick_seconds"]
        plain = world.hz("daemon", "status", check=False)
        assert plain.returncode == 1
        assert plain.stderr.startswith("HZD070: "), plain.stderr
        assert len(plain.stderr.strip().splitlines()) == 1
    finally:
        stopped = world.hz("daemon", "stop", check=False)
    assert stopped.returncode == 0, stopped.stderr


def test_a_broken_source_cache_stops_only_its_readers_and_the_loop_ticks_on(
    world: World, daemons: Daemons
) -> None:
    """Issue 12 item 12: a fault under every fetch (the source cache unwritable, as on a full
    disk) stops only the turns that need it, with a coded error; the loop keeps ticking and
    healthy, before and after the fault is gone."""
    hourly_digest(world, "digest")
    cache = source_cache_is_a_file(world)
    _start(world, daemons, HZ_NOW=SLOT_DUE_AT, HZ_TICK_SECONDS="0.3")
    try:
        _, health = eventually(
            lambda: found if (found := _status(world))[1]["ticks"] >= 2 else None,
            "the loop ticks on past the broken cache",
        )
        assert health["healthy"] is True and health["tick_error"] is None
        assert listed(world)["digest"]["last_disposition"] in (None, "failed")
        cache.unlink()
        ticks = _status(world)[1]["ticks"]
        _, health = eventually(
            lambda: found if (found := _status(world))[1]["ticks"] > ticks + 1 else None,
            "the same loop ticks on once the cache is fixed",
        )
        assert health["healthy"] is True and health["tick_error"] is None
    finally:
        world.hz("daemon", "stop", check=False)
