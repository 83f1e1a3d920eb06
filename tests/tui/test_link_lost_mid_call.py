"""s9 item 1 (attack): a call already sent when its daemon stops answering.

A real daemon (``hz daemon start``, its own process) serves the cockpit and
is stopped with SIGSTOP after a wake went out: its socket took the request,
nothing answers. Once the link's health checks call the daemon lost, the
waiting call fails at once with the lost-link code, saying it may still
happen; asked again after the daemon is back, it goes out under the same
request id, so the heinzel runs one turn for both.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from hz_kernel.connect import connect
from hz_kernel.daemon.discovery import read_discovery
from hz_kernel.http_client import HttpClient
from hz_kernel.store.scan import scan_file
from hz_tui import link
from hz_tui.app import CockpitApp
from hz_tui.tail import SPINE_NAME
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, until
from tests.tui.test_reconnect_pages import ATTACH_S, served

NOW = "2026-12-01T09:00:00+00:00"
NAME = "notes-digest"


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[worlds.World]:
    """One heinzel served by a daemon, stopped (killed if it will not stop) at the end."""
    built = asyncio.run(worlds.build(tmp_path, (NAME,)))
    with served(built.home):
        yield built


def wakes_taken(world: worlds.World) -> set[str]:
    """The request ids of the wakes the heinzel's turns took up."""
    spine = world.home.heinzel_dir(world.ids[NAME]) / SPINE_NAME
    started = [e for e in scan_file(spine).events if e.kind == "turn.started"]
    taken = [str(request_id) for e in started for request_id in e.data.get("request_ids", [])]
    assert len(taken) == len(set(taken)), taken  # no request taken up by two turns
    return set(taken)


async def test_attack_a_wake_sent_before_the_daemon_stopped_fails_when_the_link_is_lost(
    world: worlds.World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack pass: a wake sent just before the daemon was SIGSTOPped waited the client's
    300 s call timeout after the header said "reconnecting…". It now fails with HZD110 as
    soon as the daemon is lost, says it may still happen, and pressed again once the
    daemon is back it is the same request: one turn, not two."""
    monkeypatch.setattr(link, "ALIVE_EVERY_S", 0.3)
    monkeypatch.setattr(link, "ALIVE_TIMEOUT_S", 2.0)  # a loaded machine still answers in time
    client = await connect(world.home)
    assert isinstance(client, HttpClient)
    app = CockpitApp(world.home, client)
    pid = read_discovery(world.home).pid  # type: ignore[union-attr]
    heinzel_id = world.ids[NAME]
    before = wakes_taken(world)

    def said(*words: str) -> list[str]:
        return [n.message for n in app.notices.history if all(w in n.message for w in words)]

    try:
        async with app.run_test(size=SIZE):
            await app.loaded.wait()
            os.kill(pid, signal.SIGSTOP)
            try:
                app.act(heinzel_id, "wake")
                await until(lambda: (heinzel_id, "wake") in app.unanswered, ATTACH_S)
                assert not app.link.attached
                [cut] = said("HZD110")
                assert cut.startswith(f"{NAME}: ") and "may still happen" in cut, cut
                assert "same request id" in cut, cut
            finally:
                os.kill(pid, signal.SIGCONT)
            _, sent = app.unanswered[heinzel_id, "wake"]
            await until(lambda: app.link.attached, ATTACH_S)
            app.act(heinzel_id, "wake")
            await until(lambda: bool(said(f"{NAME}: turn")), ATTACH_S)
            assert not app.unanswered
    finally:
        await app.link.close()
    request_id = getattr(sent, "request_id", None)
    assert request_id is not None
    await until(lambda: wakes_taken(world) - before == {request_id}, ATTACH_S)
