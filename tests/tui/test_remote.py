"""Issue 13 item 5: the cockpit attached with ``--connect`` runs from the daemon's wire alone.

A real daemon (``hz daemon start``, its own process) serves a home with a
real heinzel and the offline local model. The cockpit gets the client
``hz --connect`` builds and a folder of its own under the user's state dir;
an audit hook records every file this process opens or lists under the
daemon's home while the cockpit runs, and there must be none: rows, toasts
and the live turn all come from operations and the feed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hz_kernel import operations as ops
from hz_kernel import remote
from hz_kernel.daemon.protocol import Discovery
from hz_kernel.http_client import HttpClient
from hz_tui.app import CockpitApp
from hz_tui.sources import FeedSource
from hz_tui.widgets.live_turn import WireTurnPanel
from hz_tui.widgets.step_line import StepLine
from tests.support.env import hz_env
from tests.tui import homes, worlds
from tests.tui.test_cockpit import SIZE, open_page, table_of, text_of, until
from tests.tui.test_heinzel_live import messages_of
from tests.tui.worlds import LONG_NOTES

HZ = Path(sys.executable).parent / "hz"
TURN_S = 30.0


class FileAudit:
    """Every path under ``root`` this process opens or lists while ``watching`` is set."""

    watching: Path | None = None
    seen: list[str] = []  # noqa: RUF012  (one audit hook per process, state on the class)
    installed = False

    @classmethod
    def hook(cls, event: str, args: tuple[Any, ...]) -> None:
        if cls.watching is None or event not in ("open", "os.scandir", "os.listdir"):
            return
        path = args[0] if args else None
        if isinstance(path, str | bytes | os.PathLike):
            text = os.fsdecode(path)
            if text.startswith(str(cls.watching)):
                cls.seen.append(f"{event} {text}")

    @classmethod
    def watch(cls, root: Path) -> None:
        if not cls.installed:
            sys.addaudithook(cls.hook)
            cls.installed = True
        cls.seen.clear()
        cls.watching = root

    @classmethod
    def stop(cls) -> list[str]:
        cls.watching = None
        return list(cls.seen)


def hz(world: worlds.World, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = hz_env(world.home.root, **({"HZ_NOW": homes.NOW, "HZ_TICK_SECONDS": "3600"} | env))
    return subprocess.run(
        [str(HZ), *args], env=clean, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[worlds.World, str]]:
    """A daemon on a world with one approved digest heinzel; its world and the heinzel's id."""
    world = worlds.make_world(tmp_path / "world")
    world.add_note("wednesday.md", "# Wednesday\n" + LONG_NOTES)
    made = hz(world, "heinzel", "new", str(_contract(tmp_path)), "--json")
    assert made.returncode == 0, made.stderr
    assert hz(world, "approve", "notes-digest").returncode == 0
    # A first turn takes the notes in, so the daemon's first tick finds nothing to wake for.
    assert hz(world, "heinzel", "wake", "notes-digest").returncode == 0
    started = hz(world, "daemon", "start", HZ_MODEL_DELAY_MS="1000")
    assert started.returncode == 0, started.stderr
    try:
        yield world, Discovery.model_validate_json(world.home.discovery_path.read_bytes()).pid
    finally:
        hz(world, "daemon", "stop")


def _contract(tmp_path: Path) -> Path:
    path = tmp_path / "notes-digest.prose.md"
    path.write_text(worlds.digest("notes-digest"))
    return path


async def test_the_wire_only_cockpit_lists_follows_and_streams_a_turn_without_reading_the_home(
    daemon: tuple[worlds.World, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 item 5: rows update live, a draft's toast comes and a page opened mid-turn
    catches up and streams the rest, all over the wire; no file of the home is touched."""
    world, pid = daemon
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    found = Discovery.model_validate_json(world.home.discovery_path.read_bytes())
    client = await remote.attach(found.address, found.token)
    host, port = remote.check_url(found.address)
    local = remote.connection_home(host, port)
    assert isinstance(client, HttpClient) and client.remote
    assert not str(local.root).startswith(str(world.home.root))
    FileAudit.watch(world.home.root)
    app = CockpitApp(local, client)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            assert isinstance(app.watcher, FeedSource)
            where = f"remote daemon (pid {pid}) at {found.address}, home {world.home.root}"
            assert app.link.where == where
            # The test's home path is long: the header has room for the brief form only.
            assert app.sub_title.startswith(f"remote daemon (pid {pid})")
            table = table_of(app)
            heinzel = next(iter(app.rows))
            assert app.rows[heinzel].name == "notes-digest"
            await client.call(ops.WAKE, ops.WakeRequest(ref="notes-digest"))
            await until(lambda: table.shown[heinzel]["state"].plain == "awake", TURN_S)
            # The fixture's turn drafted already: this turn's own draft is the toast.
            await until(
                lambda: any("notes-digest: a draft landed" in m for m in messages_of(app)), TURN_S
            )
            # The row tells this turn's outcome once it ended (none while it ran).
            await until(lambda: app.rows[heinzel].last_disposition == "drafted", TURN_S)

            await client.call(ops.WAKE, ops.WakeRequest(ref="notes-digest"))
            await until(lambda: app.rows[heinzel].state == "awake", TURN_S)
            page = await open_page(pilot, heinzel)
            panel = page.turn_panel
            assert isinstance(panel, WireTurnPanel)
            await until(lambda: panel.live.status == "running", TURN_S)
            await until(lambda: panel.live.status == "finished", TURN_S)
            await until(lambda: panel.settled)
            shown = panel.stream.text
            assert shown.count("### Notes") == 1
            assert "- fixed the login bug" in shown and "item 13 of the long week" in shown
            assert shown.count("item 13 of the long week") == 1
            assert "✓ finish" in text_of(panel.query_one(StepLine))
            assert panel.live.disposition == "drafted"
            await pilot.press("escape")
            await until(lambda: app.screen is app.get_home())
    finally:
        touched = FileAudit.stop()
        await app.client.close()
    assert touched == [], touched


async def test_what_needs_the_daemons_machine_says_so_on_a_remote_cockpit(
    daemon: tuple[worlds.World, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 item 5: ``R`` (restart) and ``l`` (the daemon's log) on a remote cockpit's
    kernel page answer with their reason (HZU125, HZU128) instead of doing nothing, and the
    daemon keeps running."""
    world, pid = daemon
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    found = Discovery.model_validate_json(world.home.discovery_path.read_bytes())
    client = await remote.attach(found.address, found.token)
    host, port = remote.check_url(found.address)
    app = CockpitApp(remote.connection_home(host, port), client)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await pilot.press("f2")
            await until(lambda: type(app.screen).__name__ == "DaemonScreen")
            await pilot.press("ctrl+r")
            await until(lambda: any(m.startswith("HZU125") for m in messages_of(app)))
            await pilot.press("l")
            await until(lambda: any(m.startswith("HZU128") for m in messages_of(app)))
            assert type(app.screen).__name__ == "DaemonScreen"
    finally:
        await app.link.close()
    assert Discovery.model_validate_json(world.home.discovery_path.read_bytes()).pid == pid
