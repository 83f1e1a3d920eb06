"""issue 13 item 7: the daemon's log in the cockpit; item 4: R asks before draining turns.

The log view reads ``<home>/daemon.log`` from disk as the daemon's rotating
handler writes it; the restart test drives a real daemon with a turn running.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from textual.widgets import Static

from hz_kernel.connect import connect
from hz_kernel.daemon.logs import RotatingLog
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_tui.app import CockpitApp
from hz_tui.commands import cockpit_commands
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.daemon import DaemonScreen
from hz_tui.screens.logs import LogScreen
from hz_tui.widgets.log_view import LogView
from tests.tui.cells import row_text, screen_cells
from tests.tui.test_cockpit import SIZE, text_of, until
from tests.tui.test_snapshots import THEMES, cockpit, loaded

HZ = [sys.executable, "-m", "hz_kernel.cli"]


def _lines(app: CockpitApp) -> list[str]:
    return [line.text for line in app.screen.query_one(LogView).lines]


def _rotating(root: Path) -> tuple[logging.Logger, RotatingLog]:
    logger = logging.getLogger(f"test.cockpit.{root}")
    logger.propagate = False
    handler = RotatingLog(root / "daemon.log", 600, 2, carry_stdio=False)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger, handler


async def test_issue13_item7_the_log_view_opens_from_the_kernel_page_and_follows_rotations(
    cockpit_home: Home, client: object
) -> None:
    logger, handler = _rotating(cockpit_home.root)
    try:
        for n in range(20):
            logger.info("line %03d %s", n, "a" * 40)
        assert (cockpit_home.root / "daemon.log.1").exists()
        app = CockpitApp(cockpit_home, client, live=False)  # type: ignore[arg-type]
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await pilot.press("f2")
            assert isinstance(app.screen, DaemonScreen)
            await pilot.press("l")
            await until(lambda: isinstance(app.screen, LogScreen))
            shown = _lines(app)
            assert [line.split()[1] for line in shown] == [f"{n:03d}" for n in range(20)][
                -len(shown) :
            ]
            assert len(shown) > len((cockpit_home.root / "daemon.log").read_text().splitlines())
            for n in range(20, 40):  # several rotations while the page follows
                logger.info("line %03d %s", n, "b" * 40)
                await pilot.pause(0.1)
            await until(lambda: _lines(app)[-1].startswith("line 039"))
            numbers = [int(line.split()[1]) for line in _lines(app)]
            assert numbers == list(range(numbers[0], 40)), "no line lost or doubled"
            await pilot.press("f")
            where = text_of(app.screen.query_one("#log-where", Static))
            assert "paused" in where
            await pilot.press("escape")
            assert isinstance(app.screen, DaemonScreen)
    finally:
        handler.close()
        logger.removeHandler(handler)


async def test_issue13_item7_the_palette_opens_the_log_and_a_missing_log_is_said(
    cockpit_home: Home, client: object
) -> None:
    app = CockpitApp(cockpit_home, client, live=False)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        command = next(c for c in cockpit_commands(app) if c.title == "Daemon log")
        command.run()
        await until(lambda: isinstance(app.screen, LogScreen))
        await pilot.pause()
        assert f"No daemon log at {cockpit_home.root / 'daemon.log'}" in " ".join(_lines(app))


async def test_issue14_item7_a_long_log_line_wraps_and_nothing_of_it_is_cut(
    cockpit_home: Home, client: object
) -> None:
    """issue 14 item 7: at 80 columns a log line longer than the page wraps onto the next rows:
    every character of it is on screen, and it re-wraps when the terminal widens."""
    long_line = "2026-12-01 09:00:00 WARNING " + " ".join(f"word{n:03d}" for n in range(40))
    (cockpit_home.root / "daemon.log").write_text(f"first\n{long_line}\nlast\n")
    app = CockpitApp(cockpit_home, client, live=False)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        await app.loaded.wait()
        await pilot.press("f2", "l")
        await until(lambda: isinstance(app.screen, LogScreen))
        await pilot.pause()
        view = app.screen.query_one(LogView)
        cells = screen_cells(app)
        rows = [row_text(cells, y) for y in range(view.region.y, view.region.bottom)]
        assert "".join(row.strip() for row in rows).count("word039") == 1
        shown = " ".join(row.strip() for row in rows)
        assert long_line in shown, shown
        assert max(len(row.rstrip()) for row in rows) <= 80
        narrow = len(view.rows)
        await pilot.resize_terminal(200, 24)
        await pilot.pause()
        assert len(view.rows) < narrow
        cells = screen_cells(app)
        rows = [row_text(cells, y) for y in range(view.region.y, view.region.bottom)]
        assert long_line in " ".join(row.strip() for row in rows)


@pytest.mark.parametrize("theme", THEMES)
def test_daemon_log(snap_compare, snapshot_client, theme: str) -> None:
    home, client = snapshot_client
    log = home.root / "daemon.log"
    log.write_text(
        "".join(
            f"2026-12-01 09:00:{n:02d},000 INFO hz.daemon: tick: woke {n % 3 + 1} heinzels\n"
            for n in range(30)
        )
        + "2026-12-01 09:00:30,000 WARNING hz.daemon: tick: HZT021: source failed (notes)\n"
    )
    app = cockpit(home, client, theme)

    async def open_log(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        app.action_logs()
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(120, 40), run_before=open_log)
    finally:
        log.unlink()


# -- restart with turns running ----------------------------------------------------------------


def _spine_kinds(root: Path, heinzel_id: str, turn: str) -> list[str]:
    import orjson

    path = root / "heinzel" / heinzel_id / "session.jsonl"
    events = [orjson.loads(line) for line in path.read_bytes().splitlines() if line]
    return [e["kind"] for e in events if e["turn"] == turn]


async def test_issue13_item4_restart_with_a_turn_running_asks_then_drains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.daemon.daemon_helpers import Daemons, daemon_pids, hz
    from tests.integration.daemon.test_daemon_turns import _heinzel
    from tests.support.homes import make_world

    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world, first_turn=True)
    home = Home.resolve(world.home)
    # The model is held until the daemon drains: the turn is surely still thinking when R is
    # pressed, however slow the machine, and the drain waits no longer than it must.
    hold = tmp_path / "hold"
    hold.touch()
    knobs = {"HZ_MODEL_HOLD_FILE": str(hold), "HZ_TICK_SECONDS": "0.5"}
    daemons = Daemons()
    try:
        first = daemons.start(home, env=knobs)
        assert hz(world.home, "heinzel", "wake", "notes-digest").returncode == 0
        client = await connect(home)
        assert isinstance(client, HttpClient)
        app = CockpitApp(home, client)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await app.loaded.wait()
                await until(
                    lambda: app.rows[heinzel_id].state == "awake", timeout=30
                )  # the live rows see the turn running
                turn = app.rows[heinzel_id].last_turn
                await pilot.press("f2")
                await until(lambda: isinstance(app.screen, DaemonScreen))
                await until(lambda: app.screen.check_action("restart", ()) is True)
                await pilot.press("ctrl+r")
                await until(lambda: isinstance(app.screen, ConfirmScreen))
                asked = app.screen
                assert isinstance(asked, ConfirmScreen)
                assert "1 turn runs" in asked.about and "step boundary" in asked.about
                await pilot.press("y")
                async with HttpClient(client.discovery) as first_daemon:
                    deadline = time.monotonic() + 60
                    while not (await first_daemon.health()).draining:
                        assert time.monotonic() < deadline, "the restart never drained"
                        await asyncio.sleep(0.05)
                hold.unlink()  # think ends: the turn reaches its step boundary
                # The link may reattach to the draining daemon for a moment; the restart ends on
                # the new one.
                await until(lambda: _daemon_pid(app.link.current) not in (None, first["pid"]), 60)
                fresh = app.link.current
                assert isinstance(fresh, HttpClient)
                daemons.track(fresh.discovery.pid)
        finally:
            await app.link.current.close()
        deadline = time.monotonic() + 60
        while "turn.finished" not in _spine_kinds(world.home, heinzel_id, str(turn)):
            assert time.monotonic() < deadline, "the resumed turn did not finish"
            time.sleep(0.1)
        kinds = _spine_kinds(world.home, heinzel_id, str(turn))
        assert kinds.count("turn.resumed") == 1 and kinds.count("turn.finished") == 1
        env = {**os.environ, "HZ_HOME": str(world.home)}
        subprocess.run([*HZ, "daemon", "stop"], env=env, capture_output=True, timeout=60)
    finally:
        for pid in daemon_pids(world.home):
            daemons.track(pid)
        daemons.kill_all()


def _daemon_pid(client: object) -> int | None:
    return client.discovery.pid if isinstance(client, HttpClient) else None
