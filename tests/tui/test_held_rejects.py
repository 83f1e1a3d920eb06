"""Attacks on issue 14's held rejections (points 1 and 3), with Pilot over a real embedded kernel.

The undo of a rejection never claims a restore it did not make; the held
file is changed under a lock, so cockpits never overwrite each other's
entries; a FIFO where a cockpit file belongs never hangs the start.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hz_kernel.client import LocalClient
from hz_tui.app import SETTINGS_NOTICE_S, CockpitApp
from hz_tui.held_rejects import HeldRejects
from hz_tui.settings import prefs_path
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, until
from tests.tui.test_review_desk import THREE, client_for, open_desk, pending, rejections

NOW = "2026-12-01T09:00:00+00:00"


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)


@pytest.fixture
async def three(tmp_path: Path) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
    world = await worlds.build(tmp_path, THREE)
    client = await client_for(world)
    try:
        yield world, client
    finally:
        await client.close()


async def test_attack1_undo_of_a_rejection_no_longer_held_says_so_and_restores_nothing(
    three: tuple[worlds.World, LocalClient],
) -> None:
    """``u`` never reports "reject undone" for an entry it could not take back (HZU245)."""
    world, client = three
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 3)
        screen.undo_seconds = 3600
        name = screen.queue.drafts[0].heinzel_name or ""
        await pilot.press("x")
        await until(lambda: screen.queue.row_count == 2)
        HeldRejects(world.home).path.unlink()  # taken off the file behind this cockpit's back
        await pilot.press("u")
        await until(lambda: any("HZU245" in n.message for n in app.notices.history))
        messages = [n.message for n in app.notices.history]
        assert not any("reject undone" in m for m in messages), messages
        assert screen.queue.row_count == 2
        assert name not in {d.heinzel_name for d in screen.queue.drafts}
    assert rejections(world, name) == 0  # nothing was sent by this cockpit
    assert await pending(client) == set(THREE)


HOLD_MANY = """
import os, sys, time
from pathlib import Path
from hz_kernel.home import Home
from hz_tui.held_rejects import HeldRejects
held = HeldRejects(Home.resolve(sys.argv[1]))
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.01)
for n in range(int(sys.argv[4])):
    held.hold(f"{sys.argv[3]}-{n}", sys.argv[3])
"""


def test_attack1_two_cockpits_holding_at_once_keep_every_entry(tmp_path: Path) -> None:
    """Each hold is a read-modify-write under the file's lock: none overwrites another's."""
    world = worlds.make_world(tmp_path)
    go = tmp_path / "go"
    count = 40
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", HOLD_MANY, str(world.home.root), str(go), who, str(count)]
        )
        for who in ("a", "b", "c")
    ]
    go.touch()
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    held = HeldRejects(world.home).load()
    assert sorted(h.key for h in held) == sorted(
        f"{who}-{n}" for who in ("a", "b", "c") for n in range(count)
    )
    assert {h.owner.pid for h in held if h.owner} == {w.pid for w in writers}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["held-rejects", "cockpit.json"])
async def test_attack3_a_fifo_where_a_cockpit_file_belongs_never_hangs_the_start(
    three: tuple[worlds.World, LocalClient], where: str
) -> None:
    """The cockpit opens its files without blocking and refuses a FIFO (HZS090)."""
    world, client = three
    path = HeldRejects(world.home).path if where == "held-rejects" else prefs_path(world.home)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    os.mkfifo(path)
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await app.warmed.wait()
        if where == "cockpit.json":
            await until(lambda: any("HZS090" in n.message for n in app.notices.history))
            said = next(n for n in app.notices.history if "HZS090" in n.message)
            assert said.toast is not None and said.toast.timeout == SETTINGS_NOTICE_S, (
                "left on screen long enough to be read (attack pass: it went before one looked)"
            )
        screen = await open_desk(pilot, 3)
        screen.undo_seconds = 3600
        await pilot.press("x")  # the FIFO is replaced by a real file: the hold works
        await until(lambda: screen.queue.row_count == 2)
        await pilot.press("u")
        await until(lambda: screen.queue.row_count == 3)
