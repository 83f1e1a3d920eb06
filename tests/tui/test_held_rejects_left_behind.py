"""Issue 14 item 3 (attack): a reject a quit cockpit left behind is sent by one already running.

A cockpit that quits while its daemon is away leaves its held rejections on
disk (HZU246) for the next cockpit to send at its start. A cockpit that was
already running then sends them too, as soon as its link is back: it claims
those whose owner process is gone, under the held file's lock, as a starting
cockpit does (``HeldRejects.claim_left_behind``), and sends each once.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from hz_kernel import operations as ops
from hz_tui.held_rejects import HeldRejects
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, until
from tests.tui.test_held_rejects_reconnect import messages, open_app, stop, world
from tests.tui.test_reconnect_pages import ATTACH_S, start
from tests.tui.test_review_desk import NOW, rejections

__all__ = ["world"]  # three heinzels with a draft each, served by a daemon

#: A cockpit that held a reject and ended before it could send it (the daemon was away).
QUIT_COCKPIT = """
import sys
from hz_kernel.home import Home
from hz_tui.held_rejects import HeldRejects
HeldRejects(Home.resolve(sys.argv[1])).hold(sys.argv[2], sys.argv[3])
"""


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)


async def test_issue14_item3_a_running_cockpit_sends_what_a_quit_cockpit_left_on_reconnect(
    world: worlds.World,
) -> None:
    app = await open_app(world)
    try:
        async with app.run_test(size=SIZE):
            await app.warmed.wait()
            drafts = (await app.client.call(ops.DRAFTS, ops.Empty())).items
            first = next(d for d in drafts if d.heinzel_name == "notes-digest")
            stop(world)
            await until(lambda: not app.link.attached, ATTACH_S)
            quit_cockpit = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    QUIT_COCKPIT,
                    str(world.home.root),
                    first.key,
                    "notes-digest",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert quit_cockpit.returncode == 0, quit_cockpit.stderr
            held = HeldRejects(world.home).load()
            assert [h.key for h in held] == [first.key] and held[0].left_behind()

            start(world.home)
            await until(lambda: app.link.attached, ATTACH_S)
            await until(lambda: not HeldRejects(world.home).load(), ATTACH_S)
            await until(lambda: "notes-digest: draft rejected" in messages(app))
    finally:
        await app.link.close()
    assert rejections(world, "notes-digest") == 1


async def test_attack_a_running_cockpit_sends_what_a_killed_cockpit_left_while_linked(
    world: worlds.World,
) -> None:
    """attack pass, session 6: a cockpit killed in a reject's undo window left it held while
    another cockpit ran with its link intact; it waited for the next cockpit's start. The
    running cockpit now looks for such rejections now and then (``look_for_left_behind``,
    every ``LEFT_BEHIND_EVERY_S``) and sends each once."""
    app = await open_app(world)
    try:
        async with app.run_test(size=SIZE):
            await app.warmed.wait()
            drafts = (await app.client.call(ops.DRAFTS, ops.Empty())).items
            first = next(d for d in drafts if d.heinzel_name == "notes-digest")
            killed_cockpit = subprocess.run(
                [sys.executable, "-c", QUIT_COCKPIT, str(world.home.root), first.key, "x"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert killed_cockpit.returncode == 0, killed_cockpit.stderr
            assert app.link.attached and HeldRejects(world.home).load()[0].left_behind()
            app.look_for_left_behind()
            await until(lambda: not HeldRejects(world.home).load(), ATTACH_S)
            await until(lambda: "x: draft rejected" in messages(app))
            app.look_for_left_behind()  # nothing is held now: nothing more is sent
    finally:
        await app.link.close()
    assert rejections(world, "notes-digest") == 1
