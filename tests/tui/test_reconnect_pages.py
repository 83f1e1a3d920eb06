"""Issue 13 item 4: what the header and the kernel page say across a lost and found daemon.

Real daemons (``hz daemon start``, their own processes) on the standard
test home; the first is SIGKILLed under the cockpit and another started.
The header must keep saying how the cockpit came by its daemon (here:
``adopted``, for one it did not start; ``restarted`` after ``R``), and the
kernel page must not show the lost daemon's figures while it reconnects.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from hz_kernel.connect import connect
from hz_kernel.daemon.discovery import read_discovery
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_tui.app import CockpitApp
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.daemon import DaemonScreen
from hz_tui.screens.home import HomeScreen
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.status_line import StatusLine
from tests.e2e.test_cockpit_reconnects import kill_daemon
from tests.support.env import hz_env
from tests.support.homes import HZ
from tests.tui import homes
from tests.tui.test_attach import hz
from tests.tui.test_cockpit import SIZE, text_of, until
from tests.tui.test_reconnecting import gone_daemon
from tests.tui.test_snapshots import loaded

#: Long enough for a daemon to start and the link's backoff to find it, on a loaded machine.
ATTACH_S = 30.0


def start(home: Home) -> int:
    started = hz(home, "daemon", "start")
    assert started.returncode == 0, started.stderr
    found = read_discovery(home)
    assert found is not None
    return found.pid


@contextlib.contextmanager
def served(home: Home) -> Iterator[Home]:
    """``home`` with a daemon running; whatever daemon runs at the end is stopped (killed if
    it will not stop)."""
    start(home)
    try:
        yield home
    finally:
        hz(home, "daemon", "stop")
        found = read_discovery(home)
        if found is not None and Path(f"/proc/{found.pid}").exists():
            kill_daemon(home)


@pytest.fixture
def daemon(cockpit_home: Home) -> Iterator[Home]:
    """The test home with a daemon running, stopped at the end."""
    with served(cockpit_home) as home:
        yield home


def page_text(page: DaemonScreen) -> str:
    parts = [text_of(page.query_one(f"#{name}", Facts)) for name in ("facts", "tick", "limits")]
    parts.append(text_of(page.query_one("#turns", Static)))
    return " ".join(" ".join(parts).split())


async def test_issue13_item4_the_header_says_adopted_after_a_reconnect_and_restarted_after_r(
    daemon: Home,
) -> None:
    """Issue 13 item 4 (header): a daemon found after the loss is "· adopted" (the cockpit did
    not start it); one the cockpit restarted with Ctrl+R is "· restarted"."""
    client = await connect(daemon, start=True)
    assert isinstance(client, HttpClient)
    app = CockpitApp(daemon, client)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            assert app.sub_title.endswith(" · adopted")
            kill_daemon(daemon)
            await until(lambda: app.sub_title.startswith("reconnecting…"), ATTACH_S)
            second = start(daemon)
            found = read_discovery(daemon)
            assert found is not None
            await until(lambda: app.sub_title.startswith(f"daemon (pid {second})"), ATTACH_S)
            assert app.sub_title == f"daemon (pid {second}) at {found.address} · adopted"

            await pilot.press("f2")
            await until(lambda: isinstance(app.screen, DaemonScreen))  # Ctrl+R is its key
            await pilot.press("ctrl+r")
            await until(lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")
            await until(lambda: f"(pid {second})" not in app.sub_title, ATTACH_S)
            await until(lambda: app.sub_title.endswith(" · restarted"), ATTACH_S)
            third = read_discovery(daemon)
            assert third is not None and third.pid != second
            assert app.sub_title == f"daemon (pid {third.pid}) at {third.address} · restarted"
    finally:
        await app.link.close()


async def test_issue13_item4_the_kernel_page_says_reconnecting_without_stale_figures(
    daemon: Home,
) -> None:
    """Issue 13 item 4 (kernel page): while the daemon is lost the page says it is reconnecting
    and shows none of the lost daemon's numbers; once attached it shows the new daemon's."""
    client = await connect(daemon)
    assert isinstance(client, HttpClient)
    first = client.discovery.pid
    app = CockpitApp(daemon, client)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await pilot.press("f2")
            page = app.screen
            assert isinstance(page, DaemonScreen)
            await until(lambda: f"Process pid {first}" in page_text(page), ATTACH_S)
            assert "0 running, 0 queued" in page_text(page)

            kill_daemon(daemon)
            await until(lambda: "reconnecting…" in page_text(page), ATTACH_S)
            shown = page_text(page)
            assert "Process" not in shown and "running," not in shown and "queued ·" not in shown
            assert "Uptime" not in shown and "Every" not in shown

            second = start(daemon)
            await until(lambda: f"Process pid {second}" in page_text(page), ATTACH_S)
            shown = page_text(page)
            assert "reconnecting…" not in shown and "0 running, 0 queued" in shown
    finally:
        await app.link.close()


def test_reconnecting_kernel_page(snap_compare, cockpit_home: Home) -> None:
    """Issue 13 item 4: the kernel page of a cockpit whose daemon is gone says it reconnects and
    shows no figures (nothing listens on the daemon's address any more)."""
    app = CockpitApp(cockpit_home, HttpClient(gone_daemon(cockpit_home, port=9)), live=False)

    async def lost(pilot: Pilot[int]) -> None:
        await loaded(pilot)
        await until(lambda: not app.link.attached)
        await pilot.press("f2")
        await until(lambda: "reconnecting…" in page_text(app.screen))  # type: ignore[arg-type]
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=lost)


async def test_fix13_the_home_says_running_is_not_known_while_reconnecting(
    cockpit_home: Home, tmp_path: Path
) -> None:
    """New-user pass (issue 13) finding 3: while reconnecting, the home table kept showing the
    lost daemon's "running 18s" (and "queued: capacity") as current. The rows' running and
    queued turns, and the footer's running count, read as not known until a daemon answers."""
    with held_daemon(cockpit_home, tmp_path):
        client = await connect(cockpit_home)
        assert isinstance(client, HttpClient)
        app = CockpitApp(cockpit_home, client)
        try:
            async with app.run_test(size=SIZE):
                await app.loaded.wait()
                home = app.screen
                assert isinstance(home, HomeScreen)

                def running() -> list[str]:
                    cells = home.table.shown.values()
                    return [
                        c["name"].plain for c in cells if c["last_turn"].plain[:8] == "running "
                    ]

                def status() -> str:
                    return text_of(home.query_one(StatusLine))

                # The tick resumes release-notes' open turn, whose model the hold file holds.
                await until(lambda: running() == ["release-notes"], ATTACH_S)
                assert "1 running" in status()
                release = next(
                    i for i, c in home.table.shown.items() if c["name"].plain == "release-notes"
                )
                kill_daemon(cockpit_home)
                await until(lambda: app.sub_title.startswith("reconnecting…"), ATTACH_S)
                assert home.table.shown[release]["last_turn"].plain == "not known now"
                assert "running: not known" in status() and "1 running" not in status()
        finally:
            await app.link.close()


@contextlib.contextmanager
def held_daemon(home: Home, tmp_path: Path) -> Iterator[None]:
    """A daemon of ``home`` whose model the hold file holds: its tick resumes the release-notes
    turn, which then runs (mid-think) until the end; the daemon is stopped (or killed) then."""
    hold = tmp_path / "hold"
    hold.touch()
    env = hz_env(home.root, HZ_NOW=homes.NOW, HZ_TICK_SECONDS="3600")
    started = subprocess.run(
        [*HZ, "daemon", "start"], env={**env, "HZ_MODEL_HOLD_FILE": str(hold)}, timeout=60
    )
    assert started.returncode == 0
    try:
        yield
    finally:
        hold.unlink()
        hz(home, "daemon", "stop")
        found = read_discovery(home)
        if found is not None and Path(f"/proc/{found.pid}").exists():
            kill_daemon(home)


async def test_fix13_the_restart_question_counts_one_turn_as_one(
    cockpit_home: Home, tmp_path: Path
) -> None:
    """New-user pass (issue 13) finding 5: with one turn running, Ctrl+R asked "1 turn runs:
    the daemon waits until they reach a step boundary … resumes them"."""
    with held_daemon(cockpit_home, tmp_path):
        client = await connect(cockpit_home)
        assert isinstance(client, HttpClient)
        app = CockpitApp(cockpit_home, client)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await app.loaded.wait()
                release = next(r for r in app.rows.values() if r.name == "release-notes")
                await until(
                    lambda: (
                        app.rows[release.id].state == "awake"
                        and not app.rows[release.id].interrupted
                    ),
                    ATTACH_S,
                )
                await pilot.press("f2")
                await until(lambda: isinstance(app.screen, DaemonScreen))
                await pilot.press("ctrl+r")
                await until(lambda: isinstance(app.screen, ConfirmScreen))
                asked = app.screen
                assert isinstance(asked, ConfirmScreen)
                assert asked.about == (
                    "1 turn runs: the daemon waits until it reaches a step boundary, then "
                    "restarts, and the new one resumes it."
                )
                await pilot.press("escape")
        finally:
            await app.link.close()
