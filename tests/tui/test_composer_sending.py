"""issue 14 item 4, the composer under a fast typist, a second window and large messages.

Pilot on a real embedded kernel and real files: Enter right after the last
key (tmux ``send-keys``, a paste) sends exactly what the screen shows; a
message sent never comes back into the composer; messages and pastes over
the limits are refused with a coded notice and kept, never a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import orjson
import pytest
from textual import events
from textual.pilot import Pilot

from hz_kernel import operations as ops
from hz_kernel.api import CHAT_MESSAGE_MAX_CHARS, COMPOSER_TEXT_MAX_BYTES
from hz_kernel.client import LocalClient
from hz_kernel.store.composer import composer_path
from hz_tui.app import CockpitApp
from hz_tui.screens.choose import ChooseScreen
from hz_tui.widgets.composer import SAVE_AFTER_S, Composer
from tests.tui import worlds
from tests.tui.kernels import embedded_client
from tests.tui.test_cockpit import SIZE, open_page, until
from tests.tui.windows import two_windows


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> worlds.World:
    monkeypatch.setenv("HZ_NOW", "2026-12-01T09:00:00+00:00")
    return worlds.make_world(tmp_path)


@pytest.fixture
async def client(world: worlds.World) -> AsyncIterator[LocalClient]:
    async with embedded_client(world) as opened:
        yield opened


@pytest.fixture
async def heinzel(client: LocalClient, world: worlds.World) -> str:
    return await worlds.add_heinzel(client.kernel, world, "notes-digest", wake=False)


def messages_of(app: CockpitApp) -> list[str]:
    return [n.message for n in app.notices.history]


async def chats(client: LocalClient, heinzel: str) -> list[tuple[str, str]]:
    inbox = await client.call(ops.INBOX, ops.HeinzelRef(ref=heinzel))
    return [(item.message, item.mode) for item in inbox.items if item.kind == "chat"]


async def until_chats(
    client: LocalClient, heinzel: str, check: Callable[[list[tuple[str, str]]], bool]
) -> None:
    """Wait until the heinzel's inbox holds what ``check`` looks for."""
    for _ in range(500):
        if check(await chats(client, heinzel)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the inbox holds {await chats(client, heinzel)}")


async def burst(pilot: Pilot[None], *keys: str) -> None:
    """Keys as tmux ``send-keys`` delivers them: all queued before the first is handled."""
    app = pilot.app
    assert app._driver is not None
    for key in keys:
        char = key if len(key) == 1 else None
        if key == "space":
            char = " "
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)
    await pilot.pause()


async def test_issue14_item4_enter_right_after_typing_sends_what_the_screen_shows(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """Enter queued behind the keys typed just before it sends the whole text, once."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        await pilot.press("i")
        await burst(pilot, *"quick", "enter")
        await until(lambda: composer.input.text == "" and composer.state.outgoing is None)
        assert await chats(client, heinzel) == [("quick", "queue")]
        said = {
            "the message started a turn.",
            "the message is in the inbox: no turn runs, so it starts the next one.",
        }
        # With no turn running, a queued message starts one; each notice names the heinzel
        # (new-user pass: one in F5 did not say whose it was).
        assert {m.partition(": ")[2] for m in messages_of(app)} & said
        assert not any("reaches the turn at its next step" in m for m in messages_of(app))
        await burst(pilot, "ctrl+t", *"steer", "space", *"two", "enter")
        await until(lambda: len(composer.base.history) == 2 and not composer.dirty)
        assert composer.input.text == ""
        assert await chats(client, heinzel) == [("quick", "queue"), ("steer two", "steer")]
        app.post_message(events.Paste("pasted\nlines"))
        await burst(pilot, "enter")
        await until(lambda: len(composer.base.history) == 3 and not composer.dirty)
        assert (await chats(client, heinzel))[-1] == ("pasted\nlines", "steer")
        assert composer.input.text == ""


async def test_issue14_item4_a_sent_message_never_comes_back_into_the_composer(
    world: worlds.World, client: LocalClient, heinzel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a conflict resolved with "Both", the first window wakes the heinzel and steers
    the shared text at once: it goes out once and the composer is empty in both windows.

    The composer answer asked for when the composer took focus comes back after the
    send's own save; it is older than what the window saved and must not be shown.
    """
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "1500")
    async with two_windows(world, client, heinzel) as w:
        await w.keys(w.one, "i", *"first")
        await until(lambda: not w.mine.dirty and w.mine.base.revision > 0)
        await w.keys(w.two, "i")
        await until(lambda: w.theirs.input.text == "first")
        await w.keys(w.one, *" and more", "escape")
        await until(lambda: not w.mine.dirty and w.mine.base.text.endswith("more"))
        await w.keys(w.two, *", second")
        await until(lambda: isinstance(w.second.screen, ChooseScreen))
        await w.two.press("enter")  # Both, the choice highlighted first
        both = "first and more\n\nfirst, second"
        await until(lambda: w.theirs.input.text == both and not w.theirs.dirty)
        await w.two.press("escape")

        await w.keys(w.one, "i")
        await until(lambda: w.mine.input.text == both)
        await w.one.press("escape", "w")
        w.mine.screen.set_focus(w.mine.input)
        await burst(w.one, "ctrl+t", "enter")
        await until_chats(client, heinzel, lambda sent: (both, "steer") in sent)
        await until(lambda: not w.mine.dirty and not w.mine.sending_now and w.mine.base.history)
        await w.one.pause(0.5)
        assert w.mine.input.text == "" and w.mine.state.outgoing is None
        saved = await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))
        assert (saved.text, saved.outgoing, saved.history) == ("", None, [both])
        await burst(w.one, "enter")
        await w.one.pause(0.5)
        assert [c for c in await chats(client, heinzel) if c[0] == both] == [(both, "steer")]


async def test_issue14_item4_limits_refuse_with_a_coded_notice_and_keep_the_text(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """A message over the chat limit is not sent (HZU226) and stays, Enter after Enter; a paste
    over what the composer keeps stays in the window (HZU227); never a traceback."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        await pilot.press("i")
        long = "x" * (CHAT_MESSAGE_MAX_CHARS + 1)
        app.post_message(events.Paste(long))
        await burst(pilot, "enter")
        await until(lambda: any(m.startswith("HZU226: not sent") for m in messages_of(app)))
        await until(lambda: not composer.dirty)
        await burst(pilot, "enter")
        await pilot.pause(0.3)
        assert [m for m in messages_of(app) if m.startswith("HZU226")][-1].startswith("HZU226")
        assert composer.input.text == long and composer.state.outgoing is None
        saved = await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))
        assert (saved.text, saved.outgoing) == (long, None), "kept, not on its way"
        assert await chats(client, heinzel) == []

        composer.input.select_all()
        huge = "\U0001f600" * (COMPOSER_TEXT_MAX_BYTES // 4 + 1)
        app.post_message(events.Paste(huge))
        await pilot.pause(SAVE_AFTER_S + 0.2)
        await until(lambda: any(m.startswith("HZU227: not saved") for m in messages_of(app)))
        assert composer.input.text == huge, "the paste stays in the window"
        assert (await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))).text == long
        await burst(pilot, *"!")
        await pilot.pause(SAVE_AFTER_S + 0.2)
        assert len([m for m in messages_of(app) if m.startswith("HZU227")]) == 1, "said once"
        composer.input.select_all()
        await pilot.press(*"short again")
        await until(lambda: not composer.dirty)
        assert (await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))).text == "short again"


async def test_issue14_item4_enter_on_text_another_window_replaced_says_why_nothing_went(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """Enter on a text another window has since changed sends nothing and says so (HZU225):
    the newer text shows, and Enter sends that one."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        await pilot.press("i", *"mine")
        await until(lambda: not composer.dirty and composer.base.text == "mine")
        other = ops.ComposerSaveRequest(
            ref=heinzel, base=composer.base.revision, text="theirs", window="window-other"
        )
        assert (await client.call(ops.COMPOSER_SAVE, other)).saved
        await burst(pilot, "enter")
        await until(lambda: any(m.startswith("HZU225") for m in messages_of(app)))
        assert composer.input.text == "theirs" and await chats(client, heinzel) == []
        await burst(pilot, "enter")
        await until_chats(client, heinzel, lambda sent: sent == [("theirs", "queue")])


async def test_issue14_item4_a_message_sent_in_one_window_leaves_the_other(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """A second window showing the text another window then sent clears by itself (no `i`):
    its composer had no edits of its own, and the kernel's composer says the text went."""
    async with two_windows(world, client, heinzel) as w:
        await w.keys(w.one, "i", *"QUEUE dup test")
        await until(lambda: not w.mine.dirty and w.mine.base.text == "QUEUE dup test")
        await w.keys(w.two, "i")
        await until(lambda: w.theirs.input.text == "QUEUE dup test")
        await w.two.press("escape")
        await w.keys(w.one, "enter")
        await until_chats(client, heinzel, lambda sent: sent == [("QUEUE dup test", "queue")])
        await until(lambda: w.mine.input.text == "" and not w.mine.dirty)
        await until(lambda: w.theirs.input.text == "" and not w.theirs.dirty)
        assert w.theirs.base.history == ["QUEUE dup test"]


async def test_attack_enter_in_two_windows_at_once_sends_the_message_once(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """Two windows show one text and both send it at the same moment: one inbox entry."""
    async with two_windows(world, client, heinzel) as w:
        await w.keys(w.one, "i", *"say it once")
        await until(lambda: not w.mine.dirty and w.mine.base.text == "say it once")
        await w.keys(w.two, "i")
        await until(lambda: w.theirs.input.text == "say it once" and not w.theirs.dirty)
        w.into(w.first)
        w.mine.send()
        w.into(w.second)
        w.theirs.send()
        await until(lambda: w.mine.input.text == "" and w.theirs.input.text == "")
        await until(lambda: not (w.mine.sending_now or w.theirs.sending_now))
        assert await chats(client, heinzel) == [("say it once", "queue")]
        notices = messages_of(w.first) + messages_of(w.second)
        assert not any(m.startswith("HZU225") for m in notices), notices


async def test_issue14_item4_a_damaged_or_old_composer_file_is_a_coded_line(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """A composer file the kernel cannot read is HZU229 on the page (never an empty composer
    saved over it); an outgoing message an older hz saved beyond today's limits is HZU228 when
    the cockpit would save it, never a traceback, and the text stays."""
    path = composer_path(world.home.root, heinzel)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"{not json")
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        await until(lambda: any(m.startswith("HZU229") for m in messages_of(app)))
        assert page.query_one(Composer).input.text == ""
        assert path.read_bytes() == b"{not json"
        page.dismiss()
        await pilot.pause()

        old = {"request_id": "../../x y", "message": "from before", "mode": "queue"}
        path.write_bytes(orjson.dumps({"revision": 4, "text": "from before", "outgoing": old}))
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        await until(lambda: composer.input.text == "from before")
        await pilot.press("i", *"!")
        await until(lambda: any(m.startswith("HZU228") for m in messages_of(app)))
        assert composer.input.text == "from before!"


async def test_attack_enter_in_two_windows_at_once_on_different_texts_sends_each_once(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """Two windows each typed their own message and press Enter at the same moment: both
    messages reach the inbox once each, and neither window is left asking which text stays."""
    async with two_windows(world, client, heinzel) as w:
        await w.keys(w.one, "i")
        await w.keys(w.two, "i")
        await until(lambda: w.mine.loaded and w.theirs.loaded)
        # Typed and sent in one go in each window: no save of the typing lands in between.
        w.into(w.first)
        w.mine.input.insert("GAMMA one")
        w.mine.send()
        w.into(w.second)
        w.theirs.input.insert("DELTA two")
        w.theirs.send()
        await until_chats(
            client,
            heinzel,
            lambda sent: sorted(sent) == [("DELTA two", "queue"), ("GAMMA one", "queue")],
        )
        await until(lambda: not (w.mine.sending_now or w.theirs.sending_now))
        await until(lambda: w.mine.input.text == "" and w.theirs.input.text == "")
        assert not isinstance(w.second.screen, ChooseScreen)
        assert not isinstance(w.first.screen, ChooseScreen)


async def test_attack_keep_mine_after_enter_met_another_windows_text_still_sends_it(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """Enter meets text another window saved meanwhile; "Keep mine" sends the message the
    Enter was for, once, without a second Enter."""
    async with two_windows(world, client, heinzel) as w:
        await w.keys(w.two, "i")
        await until(lambda: w.theirs.loaded and w.theirs.base.revision == 0)
        await w.keys(w.one, "i", *"draft in the first window")
        await until(lambda: not w.mine.dirty and w.mine.base.revision > 0)
        w.into(w.second)
        w.theirs.input.insert("mine to send")  # typed and sent before any save or tick
        w.theirs.send()
        await until(lambda: isinstance(w.second.screen, ChooseScreen))
        await w.keys(w.two, "down", "enter")
        await until_chats(client, heinzel, lambda sent: sent == [("mine to send", "queue")])
        await until(lambda: not w.theirs.sending_now and w.theirs.input.text == "")
