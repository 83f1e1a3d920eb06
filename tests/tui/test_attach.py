"""The cockpit attached to a real daemon: rows, actions, the kernel page and its restart over HTTP.

The daemon is started by the real ``hz daemon start`` in its own process;
the cockpit finds it through the discovery file (``connect``), lists and
acts through the HTTP client, and sees the daemon's spine appends through
its own file watcher.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hz_kernel.connect import connect
from hz_kernel.daemon.protocol import PROTOCOL_VERSION
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_tui.app import CockpitApp
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.daemon import DaemonScreen
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.heinzel_table import HeinzelTable
from tests.support.env import hz_env
from tests.tui import homes
from tests.tui.test_cockpit import SIZE, text_of, until

HZ = Path(sys.executable).parent / "hz"


def hz(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    env = hz_env(home.root, HZ_NOW=homes.NOW, HZ_TICK_SECONDS="3600")
    return subprocess.run(
        [str(HZ), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def restarted(app: CockpitApp) -> int | None:
    """The pid of the daemon the cockpit talks to (its link may pass through the old one)."""
    current = app.link.current
    return current.discovery.pid if isinstance(current, HttpClient) else None


@pytest.fixture
def daemon(cockpit_home: Home) -> Iterator[Home]:
    started = hz(cockpit_home, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        yield cockpit_home
    finally:
        hz(cockpit_home, "daemon", "stop")


async def test_the_cockpit_attaches_to_a_daemon_acts_through_it_and_restarts_it(
    daemon: Home,
) -> None:
    client = await connect(daemon)
    assert isinstance(client, HttpClient)
    first_pid = client.discovery.pid
    app = CockpitApp(daemon, client)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            assert app.sub_title.startswith(f"daemon (pid {first_pid})")
            table = app.get_home().query_one(HeinzelTable)
            assert table.row_count == 9
            health = homes.heinzel_id(9)
            table.move_cursor(row=table.position[health])
            await pilot.press("p")
            await until(lambda: table.shown[health]["state"].plain == "paused")
            await pilot.press("f2")
            page = app.screen
            assert isinstance(page, DaemonScreen)
            await until(lambda: "a local daemon" in text_of(page.query_one(Facts)))
            facts = " ".join(text_of(page.query_one(Facts)).split())
            assert (
                f"Process pid {first_pid}" in facts and f"hz protocol v{PROTOCOL_VERSION}" in facts
            )
            assert "Heinzels 9" in facts and "Ctrl+R restarts the daemon" in facts
            await pilot.press("ctrl+r")
            await until(lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")  # issue 14 item 3: a restart asks first
            await until(lambda: restarted(app) not in (None, first_pid), timeout=30)
            fresh = app.link.current
            assert isinstance(fresh, HttpClient)
            assert app.sub_title.startswith(f"daemon (pid {fresh.discovery.pid})")
            assert app.screen is page  # the kernel page stays, and shows the new daemon
            shown = f"Process pid {fresh.discovery.pid}"
            await until(lambda: shown in " ".join(text_of(page.query_one(Facts)).split()))
            assert not [n for n in app.notices.history if n.severity == "error"]
            await pilot.press("escape", "p")
            await until(lambda: table.shown[health]["state"].plain == "asleep")
    finally:
        await app.link.close()
