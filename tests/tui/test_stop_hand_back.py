"""s6: stopping a turn from the cockpit hands its messages back, unsent, and loses no key.

With a turn held mid-think (``HZ_MODEL_HOLD_FILE``), a message steered
into it comes back to the composer in STEER mode when the turn is stopped
(Ctrl+C twice, or ``K`` and ``y``), and no later turn receives it unless
the user sends it again; keys typed before, while and after it comes back
all stay; the stop question's default is Cancel. Pilot on a real embedded
kernel; what turns received is read through the client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import OptionList

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.operations import Operation, Req, Resp
from hz_tui.app import CockpitApp
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.widgets.composer import Composer
from tests.tui import worlds
from tests.tui.kernels import PassThrough
from tests.tui.test_cockpit import SIZE, open_page, until
from tests.tui.test_composer import client, heinzel, world
from tests.tui.test_composer_sending import burst

__all__ = ["client", "heinzel", "world"]  # the composer tests' world: one heinzel, long notes

WORDS = " ".join(f"w{n}" for n in range(1, 26))


@pytest.fixture
def hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """While this file exists the model holds every chunk: the turn thinks until the test
    says, however fast or slow the machine."""
    held = tmp_path / "hold"
    held.touch()
    monkeypatch.setenv("HZ_MODEL_HOLD_FILE", str(held))
    return held


async def _steered_while_thinking(
    pilot: object, client: LocalClient, heinzel: str, page: HeinzelScreen
) -> Composer:
    """A turn thinking (held), ``S3 steer`` sent into it in STEER mode from the composer."""
    composer = page.query_one(Composer)
    await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
    await until(lambda: page.turn_panel.live.step == "think")
    await pilot.press("i", "ctrl+t", *"S3 steer", "enter")  # type: ignore[attr-defined]
    await until(lambda: composer.input.text == "" and composer.state.outgoing is None)
    inbox = await client.call(ops.INBOX, ops.HeinzelRef(ref=heinzel))
    assert [(i.message, i.mode) for i in inbox.items if i.kind == "chat"] == [("S3 steer", "steer")]
    return composer


async def _turns_given(client: LocalClient, heinzel: str, message: str) -> list[str | None]:
    """The turns each message with this text reached, as the conversation shows them."""
    talk = await client.call(ops.CONVERSATION, ops.HeinzelRef(ref=heinzel))
    return [m.turn for m in talk.items if m.message == message]


async def test_s6_item1_a_stopped_turn_hands_its_steer_back_and_no_later_turn_gets_it(
    world: worlds.World, client: LocalClient, heinzel: str, hold: Path
) -> None:
    """s6 item 1: after Ctrl+C twice the steer is in the composer in STEER mode and out of the
    inbox; a later turn (started by another message) does not receive it; Enter sends it
    again, once, under a new id."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = await _steered_while_thinking(pilot, client, heinzel, page)
        stopped = page.turn_panel.live.turn
        await pilot.press("ctrl+c", "ctrl+c")
        await until(lambda: composer.input.text.strip() == "S3 steer")
        assert composer.state.mode == "steer"
        assert "STEER" in str(composer.query_one("#composer-mode").render())
        await until(lambda: page.turn_panel.live.status == "finished")
        assert page.turn_panel.live.disposition == "abandoned"
        inbox = await client.call(ops.INBOX, ops.HeinzelRef(ref=heinzel))
        assert [i.message for i in inbox.items if i.kind == "chat"] == []
        await until(lambda: not composer.dirty)
        saved = await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))
        assert (saved.text.strip(), saved.mode) == ("S3 steer", "steer")

        hold.unlink()
        other = ops.ChatRequest(ref=heinzel, message="another message", request_id="other-1")
        await client.call(ops.CHAT, other)
        await until(lambda: page.turn_panel.live.turn not in (None, stopped))
        await until(lambda: page.turn_panel.live.status == "finished")
        later = page.turn_panel.live.turn
        assert (await _turns_given(client, heinzel, "another message")) == [later]
        assert (await _turns_given(client, heinzel, "S3 steer")) == [], "no turn got it"

        assert composer.input.has_focus
        await pilot.press("enter")
        await until(lambda: composer.input.text == "" and composer.state.outgoing is None)
        await until(lambda: page.turn_panel.live.turn not in (stopped, later))
        await until(lambda: page.turn_panel.live.status == "finished")
        given = await _turns_given(client, heinzel, "S3 steer")
        assert given == [page.turn_panel.live.turn], "sent again, it reaches one turn, once"


def queue_keys(pilot: Pilot[None], *keys: str) -> None:
    """Keys handed to the app as a terminal delivers them, none handled yet."""
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(pilot.app)
        assert pilot.app._driver is not None
        pilot.app._driver.send_message(event)


class HeldStop(PassThrough):
    """The stop's answer comes back only once ``lands_now()`` holds; it returns in the same
    step of the event loop as that check, so the answer meets the composer as it was seen."""

    def __init__(self, inner: LocalClient) -> None:
        super().__init__(inner)
        self.stopped = asyncio.Event()
        self.lands_now: Callable[[], bool] = lambda: True

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        result = await self.inner.call(operation, request)
        if operation is ops.STOP:
            self.stopped.set()
            while not self.lands_now():
                await asyncio.sleep(0)
        return result


async def test_s6_item2_keys_typed_before_during_and_after_the_hand_back_all_stay(
    world: worlds.World, client: LocalClient, heinzel: str, hold: Path
) -> None:
    """s6 item 2: text typed before the stop, keys queued right behind Ctrl+C twice (as a fast
    typist or tmux sends them), keys queued as the answer lands and keys typed after it all
    stay, in order, Backspace included; the message goes in above them."""
    held = HeldStop(client)
    app = CockpitApp(world.home, held)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = await _steered_while_thinking(pilot, client, heinzel, page)
        await pilot.press(*"first line", "ctrl+j", *"second line")
        area = composer.input

        def keys_in_flight() -> bool:
            """The text area has taken keys the composer has not heard of yet (their
            ``Changed`` still queued): the moment a whole new text would lose them. (All
            typed: the answer lands anyway, so the test never hangs.)"""
            lagging = "w15" in area.text and area.text != composer.state.text
            return lagging or area.text.endswith("w25")

        held.lands_now = keys_in_flight
        await burst(pilot, "ctrl+c", "ctrl+c", *["backspace"] * 5, *" please ", *WORDS[:12])
        await until(held.stopped.is_set)
        queue_keys(pilot, *WORDS[12:])
        await until(lambda: composer.input.text.startswith("S3 steer"))
        await pilot.press(*" end")
        expected = f"S3 steer\n\nfirst line\nsecond please {WORDS} end"
        await until(lambda: composer.input.text == expected)
        assert composer.state.mode == "steer"
        await until(lambda: not composer.dirty)
        saved = await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))
        assert saved.text == expected
        hold.unlink()


async def test_s6_item3_the_stop_question_defaults_to_cancel(
    world: worlds.World, client: LocalClient, heinzel: str, hold: Path
) -> None:
    """s6 item 3: ``K`` asks "Stop think?" with Cancel highlighted, so Enter keeps the turn;
    ``y`` stops it."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
        await until(lambda: page.turn_panel.live.step == "think")
        await pilot.press("K")
        asked = app.screen
        assert isinstance(asked, ConfirmScreen) and asked.question == "Stop think?"
        options = asked.query_one(OptionList)
        highlighted = options.get_option_at_index(options.highlighted or 0)
        assert highlighted.id == "no" and "Cancel" in str(highlighted.prompt)
        await pilot.press("enter")
        assert app.screen is page
        await pilot.press("K")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await until(lambda: page.turn_panel.live.status == "finished")
        assert page.turn_panel.live.disposition == "abandoned"
        hold.unlink()
