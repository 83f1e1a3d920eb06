"""s6 attack 2 on the heinzel page: a FIFO or directory in the inbox hides nothing.

A real long-lived kernel (as ``hz`` embeds it) behind the page; the stray
entries are made as an attacker would (``mkfifo``, ``mkdir``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.store.inbox import Inbox, InboxRequest
from hz_tui.app import CockpitApp
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.inbox import InboxList
from hz_tui.widgets.timeline import Timeline
from tests.tui import worlds
from tests.tui.kernels import embedded_client
from tests.tui.test_cockpit import SIZE, open_page, text_of, until


@pytest.fixture
async def world(tmp_path: Path) -> worlds.World:
    return worlds.make_world(tmp_path)


@pytest.fixture
async def client(world: worlds.World) -> AsyncIterator[LocalClient]:
    async with embedded_client(world) as opened:
        yield opened


async def turns_ended(client: LocalClient, heinzel: str) -> None:
    """Wait (30 s at most) until no turn of ``heinzel`` runs: the long-lived kernel's wake
    answers once the turn has started."""
    for _ in range(3000):
        shown = await client.call(ops.SHOW, ops.HeinzelRef(ref=heinzel))
        if shown.heinzel.state != "awake":
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the first turn never ended")


async def test_s6_item2_the_page_shows_its_turns_and_waiting_messages_and_names_each_stray(
    world: worlds.World, client: LocalClient
) -> None:
    """The page opens without an Error banner, its Turns table is filled, the inbox list
    shows the message that waits and one ``skipped: HZS090`` line per stray entry."""
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest")
    await turns_ended(client, heinzel)  # a running turn would take the message as a steer
    await client.kernel.pause(ref=heinzel)  # the message waits
    heinzel_dir = world.home.heinzel_dir(heinzel)
    inbox = Inbox(heinzel_dir)
    inbox.admit(InboxRequest(request_id="waits", heinzel=heinzel, message="mention the launch"))
    os.mkfifo(inbox.dir / "odd-fifo.json")
    (inbox.dir / "odd-dir.json").mkdir()
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        listed = page.query_one(InboxList)
        await until(lambda: "mention the launch" in text_of(listed))
        shown = text_of(listed)
        assert shown.count("skipped: HZS090") == 2, shown
        assert "odd-fifo.json" in shown and "odd-dir.json" in shown
        assert "Error" not in text_of(page.query_one(Facts))
        assert page.query_one(Timeline).row_count >= 1
    assert app.return_code in (None, 0)
