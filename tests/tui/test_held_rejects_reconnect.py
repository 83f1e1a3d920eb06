"""Issue 14 item 3 (attack): a reject held on the review desk while its daemon goes away.

A real daemon (``hz daemon start``, its own process) serves the cockpit; the
test stops it while a reject is held and starts another. While the link is
down the reject stays undoable, or (its few seconds over) shows as waiting
for the kernel; once the link is back it is sent at once, with the desk
still open, and never applied twice.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from hz_kernel import operations as ops
from hz_kernel.api import DraftSummary
from hz_kernel.connect import connect
from hz_kernel.daemon.discovery import read_discovery
from hz_kernel.errors import HzError
from hz_kernel.http_client import HttpClient
from hz_tui import app as app_module
from hz_tui import link
from hz_tui.app import CockpitApp
from hz_tui.held_rejects import HeldRejects
from hz_tui.screens.review import ReviewScreen
from hz_tui.widgets.draft_queue import WAITING
from tests.tui import worlds
from tests.tui.test_attach import hz
from tests.tui.test_cockpit import SIZE, until
from tests.tui.test_reconnect_pages import ATTACH_S, served, start
from tests.tui.test_review_desk import THREE, open_desk, rejections

NOW = "2026-12-01T09:00:00+00:00"


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[worlds.World]:
    """Three heinzels with a draft each, served by a daemon; whatever daemon runs at the end
    is stopped (killed if it will not stop)."""
    built = asyncio.run(worlds.build(tmp_path, THREE))
    with served(built.home):
        yield built


def stop(world: worlds.World) -> None:
    stopped = hz(world.home, "daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr


def messages(app: CockpitApp) -> list[str]:
    return [n.message for n in app.notices.history]


async def open_app(world: worlds.World) -> CockpitApp:
    client = await connect(world.home)
    assert isinstance(client, HttpClient)
    return CockpitApp(world.home, client)


async def reject_the_first_held(pilot: Pilot[None]) -> DraftSummary:
    """Open the desk of three drafts and reject the first, held for an hour's undo."""
    screen = await open_desk(pilot, 3)
    first = screen.queue.drafts[0]
    screen.undo_seconds = 3600
    await pilot.press("x")
    await until(lambda: screen.queue.row_count == 2)
    return first


async def test_issue14_item3_a_reject_held_while_the_daemon_is_away_stays_undoable_then_is_sent(
    world: worlds.World,
) -> None:
    """While the link is down ``u`` brings a held draft back; a reject whose hold ends then
    stays listed, marked as waiting for the kernel (HZU240), and undoable; the link back, the
    waiting reject is sent at once with the desk still open, once."""
    app = await open_app(world)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_desk(pilot, 3)
            first, second = screen.queue.drafts[0], screen.queue.drafts[1]
            screen.undo_seconds = 3600
            await pilot.press("x")
            await until(lambda: screen.queue.row_count == 2)
            stop(world)
            await until(lambda: not app.link.attached, ATTACH_S)

            await pilot.press("u")  # the daemon is away: the draft comes back all the same
            await until(lambda: screen.queue.draft(first.key) is not None)
            assert HeldRejects(world.home).load() == []

            screen.undo_seconds = 0.05  # holds that end while the daemon is away
            for draft in (first, second):
                screen.queue.move_cursor(row=screen.queue.drafts.index(draft), animate=False)
                await pilot.press("x")
                await until(lambda key=draft.key: key in screen.waiting)
            assert screen.queue.row_count == 3  # shown, not silently hidden
            assert screen.queue.mark(first.key) == WAITING
            assert sum("HZU240" in m for m in messages(app)) == 2, messages(app)
            assert "2 reject waiting for the kernel" in str(
                screen.query_one("#review-status").render()
            )

            await pilot.press("u")  # the last one waiting is taken back
            await until(lambda: second.key not in screen.waiting)
            assert screen.queue.mark(second.key) == "" and first.key in screen.waiting
            assert [h.key for h in HeldRejects(world.home).load()] == [first.key]

            start(world.home)
            await until(lambda: app.link.attached, ATTACH_S)
            await until(lambda: not HeldRejects(world.home).load(), ATTACH_S)
            await until(lambda: screen.queue.draft(first.key) is None)
            assert app.screen is screen  # sent without leaving the desk
            assert f"{first.heinzel_name}: draft rejected" in messages(app)
            assert screen.queue.draft(second.key) is not None and not screen.waiting
    finally:
        await app.link.close()
    assert rejections(world, first.heinzel_name or "") == 1
    assert rejections(world, second.heinzel_name or "") == 0


async def test_issue14_item3_a_waiting_reject_the_kernel_already_has_is_not_applied_twice(
    world: worlds.World,
) -> None:
    """The reject reached the kernel another way while the link was down (as when a daemon
    dies before it answers): the resend looks first, says "draft rejected", and the draft is
    rejected once (the kernel refuses a second reject of a draft not pending, HZU038)."""
    app = await open_app(world)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_desk(pilot, 3)
            first = screen.queue.drafts[0]
            stop(world)
            await until(lambda: not app.link.attached, ATTACH_S)
            screen.undo_seconds = 0.05
            await pilot.press("x")
            await until(lambda: first.key in screen.waiting)
            rejected = hz(world.home, "reject", first.key)  # embedded: the daemon is away
            assert rejected.returncode == 0, rejected.stderr

            start(world.home)
            await until(lambda: not HeldRejects(world.home).load(), ATTACH_S)
            await until(lambda: f"{first.heinzel_name}: draft rejected" in messages(app))
            assert not any("HZU038" in m for m in messages(app)), messages(app)
    finally:
        await app.link.close()
    assert rejections(world, first.heinzel_name or "") == 1


async def test_issue14_item3_a_desk_closed_while_the_daemon_is_away_sends_its_reject_on_reconnect(
    world: worlds.World,
) -> None:
    """Leaving the desk while the daemon is away cannot send a held reject; the cockpit sends
    it once the link is back, not only at its next start."""
    app = await open_app(world)
    try:
        async with app.run_test(size=SIZE) as pilot:
            first = await reject_the_first_held(pilot)
            stop(world)
            await until(lambda: not app.link.attached, ATTACH_S)
            await pilot.press("escape")
            await until(lambda: not isinstance(app.screen, ReviewScreen))
            assert [h.key for h in HeldRejects(world.home).load()] == [first.key]

            start(world.home)
            await until(lambda: not HeldRejects(world.home).load(), ATTACH_S)
            await until(lambda: f"{first.heinzel_name}: draft rejected" in messages(app))
    finally:
        await app.link.close()
    assert rejections(world, first.heinzel_name or "") == 1


async def test_attack_leaving_the_desk_never_waits_long_on_a_daemon_that_does_not_answer(
    world: worlds.World,
) -> None:
    """Attack pass: with the daemon stopped (SIGSTOP: its socket takes calls, nothing answers)
    quitting with a held reject waited for the client's five-minute call timeout on a blank
    terminal. Leaving the desk now waits at most a few seconds per rejection; the rejection
    stays held for the next cockpit (HZU246 on quit)."""
    app = await open_app(world)
    pid = read_discovery(world.home).pid  # type: ignore[union-attr]
    try:
        async with app.run_test(size=SIZE) as pilot:
            first = await reject_the_first_held(pilot)
            os.kill(pid, signal.SIGSTOP)
            try:
                left = asyncio.get_running_loop().time()
                await pilot.press("escape")
                await until(lambda: not isinstance(app.screen, ReviewScreen), 120)
                waited = asyncio.get_running_loop().time() - left
            finally:
                os.kill(pid, signal.SIGCONT)
            assert waited < 60, waited  # the client's own timeout is 300 s
            assert first.key in app.unsent_rejects
            assert [h.key for h in HeldRejects(world.home).load()] == [first.key]
    finally:
        await app.link.close()


async def test_attack_a_daemon_that_stops_answering_is_lost_then_found_again(
    world: worlds.World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack pass: a SIGSTOPped daemon still takes connections, so nothing failed for
    minutes: the header said connected and a wake waited for the call timeout. Unanswered
    health checks make it lost (reconnecting…, keys fail at once with HZD110); resumed, it
    is found again."""
    monkeypatch.setattr(link, "ALIVE_EVERY_S", 0.3)
    monkeypatch.setattr(link, "ALIVE_TIMEOUT_S", 2.0)  # a loaded machine still answers in time
    app = await open_app(world)
    pid = read_discovery(world.home).pid  # type: ignore[union-attr]
    try:
        async with app.run_test(size=SIZE):
            await app.loaded.wait()
            os.kill(pid, signal.SIGSTOP)
            try:
                await until(lambda: not app.link.attached, ATTACH_S)
                with pytest.raises(HzError) as refused:
                    await app.link.call(ops.DRAFTS, ops.Empty())
                assert refused.value.code == "HZD110"
            finally:
                os.kill(pid, signal.SIGCONT)
            await until(lambda: app.link.attached, ATTACH_S)
    finally:
        await app.link.close()


async def test_attack_a_daemon_gone_for_good_is_said_with_how_to_start_one(
    world: worlds.World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack pass: after the daemon was killed the header said "reconnecting…" for good and
    nothing said what to do. A while later the cockpit says how to start one; once one runs,
    it attaches by itself and says nothing more."""
    monkeypatch.setattr(app_module, "GONE_AFTER_S", 0.5)
    app = await open_app(world)
    try:
        async with app.run_test(size=SIZE):
            await app.loaded.wait()
            stop(world)
            await until(lambda: any("No daemon answers" in m for m in messages(app)), ATTACH_S)
            said = [m for m in messages(app) if "No daemon answers" in m]
            assert "F2 then Ctrl+R starts one here, or run hz daemon start" in said[0]
            start(world.home)
            await until(lambda: app.link.attached, ATTACH_S)
    finally:
        await app.link.close()


async def test_fix13_the_no_daemon_toast_is_withdrawn_once_attached_again(
    world: worlds.World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New-user pass (issue 13) finding 4: after the cockpit re-attached, the "No daemon
    answers…" toast stayed on screen, saying what was no longer true."""
    monkeypatch.setattr(app_module, "GONE_AFTER_S", 0.5)
    app = await open_app(world)

    def showing() -> list[str]:
        return [n.message for n in app.notices.showing if "No daemon answers" in n.message]

    try:
        async with app.run_test(size=SIZE):
            await app.loaded.wait()
            stop(world)
            await until(lambda: bool(showing()), ATTACH_S)
            start(world.home)
            await until(lambda: app.link.attached, ATTACH_S)
            assert showing() == []
            assert any("No daemon answers" in m for m in messages(app))  # the history keeps it
    finally:
        await app.link.close()
