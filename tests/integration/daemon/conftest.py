"""Fixtures: a reaper for the daemons a test starts, and one shared daemon for wire tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from daemon_helpers import Daemons, make_home

from hz_kernel.home import Home

#: The slow-reader test reads its stalled socket only after the fast reader is done: a
#: generous send timeout keeps the daemon from cutting it first on a loaded machine.
SHARED_SETTINGS = {
    "feed_heartbeat_seconds": 0.3,
    "feed_queue_items": 512,
    "send_timeout_seconds": 120,
}


@pytest.fixture
def daemons() -> Iterator[Daemons]:
    started = Daemons()
    try:
        yield started
    finally:
        started.kill_all()


@pytest.fixture(scope="session")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    """One daemon for the wire and feed tests, with the bench knob on and a fast heartbeat."""
    home = make_home(tmp_path_factory.mktemp("shared") / "home", heinzels=4, daemon=SHARED_SETTINGS)
    started = Daemons()
    try:
        started.start(home, env={"HZ_BENCH_FEED": "1"})
        yield home
    finally:
        started.kill_all()
