"""issue 14 item 4, a real composer, with Pilot on a real embedded kernel and real files.

Multi-line messages (Enter sends, Ctrl+J and Shift+Enter start a line),
history with ↑/↓ kept by the kernel per heinzel, two windows on one
heinzel that never overwrite each other's newer text, the STEER/QUEUE mode
kept when a stopped turn gives its messages back, and stopping: Escape
never stops a turn, Ctrl+C twice or ``K`` (which names the step) does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from textual.widgets import Static

from hz_kernel import operations as ops
from hz_kernel.api import ComposerText, InboxItem
from hz_kernel.client import LocalClient
from hz_kernel.errors import HzError
from hz_kernel.operations import Operation, Req, Resp
from hz_tui.app import CockpitApp
from hz_tui.commands import cockpit_commands
from hz_tui.composer_store import ComposerState, HistoryWalk, reconcile
from hz_tui.link import NotConnected
from hz_tui.screens.choose import ChooseScreen
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.turn_state import LiveTurn
from hz_tui.widgets.composer import Composer, ComposerArea, settle
from tests.tui import worlds
from tests.tui.cells import row_text, screen_cells
from tests.tui.kernels import PassThrough, embedded_client
from tests.tui.test_cockpit import SIZE, open_page, until
from tests.tui.windows import two_windows


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> worlds.World:
    monkeypatch.setenv("HZ_NOW", "2026-12-01T09:00:00+00:00")
    made = worlds.make_world(tmp_path)
    made.add_note("wednesday.md", "# Wednesday\n" + worlds.LONG_NOTES)
    return made


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


async def kept(client: LocalClient, heinzel: str) -> ops.api.ComposerText:
    return await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))


async def test_issue14_item4_multi_line_send_arrives_with_its_newlines(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """Ctrl+J and Shift+Enter start a line; Enter sends the whole message, newlines and all."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        await pilot.press("i", *"first line", "ctrl+j", *"second", "shift+enter", *"third")
        assert composer.input.text == "first line\nsecond\nthird"
        assert await chats(client, heinzel) == []
        await pilot.press("enter")
        await until(lambda: composer.input.text == "" and composer.state.outgoing is None)
        assert await chats(client, heinzel) == [("first line\nsecond\nthird", "queue")]


async def test_issue14_item4_history_walks_with_up_and_down_and_is_kept_per_heinzel(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """↑ on the first line and ↓ on the last walk the messages sent; the draft comes back."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        area = composer.input
        await pilot.press("i", *"one", "enter")
        await until(lambda: area.text == "" and composer.state.outgoing is None)
        await pilot.press(*"two", "ctrl+j", *"lines", "enter")
        await until(lambda: area.text == "" and composer.state.outgoing is None)
        await pilot.press(*"draft")
        await pilot.press("up")
        assert area.text == "two\nlines" and area.cursor_location == (0, 3)
        await pilot.press("up")
        assert area.text == "one"
        await pilot.press("up")
        assert area.text == "one", "the oldest stays"
        await pilot.press("down")
        assert area.text == "two\nlines" and area.cursor_location == (1, 5)
        await pilot.press("down")
        assert area.text == "draft", "past the newest, the draft typed before comes back"
        await pilot.press("ctrl+j", *"more", "up")
        assert area.text == "draft\nmore", "↑ off the first line moves the cursor, not history"
        assert area.cursor_location[0] == 0
    await settle()
    saved = await kept(client, heinzel)
    assert saved.history == ["one", "two\nlines"] and saved.text == "draft\nmore"
    again = CockpitApp(world.home, client)
    async with again.run_test(size=SIZE) as pilot:
        await again.loaded.wait()
        page = await open_page(pilot, heinzel)
        area = page.query_one(ComposerArea)
        await until(lambda: area.text == "draft\nmore")
        await pilot.press("i", "up", "up")
        assert area.text == "two\nlines", "history outlives the window"


async def test_issue14_item4_two_windows_never_overwrite_each_others_newer_text(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """Two cockpits on one home: the second takes the newer text, or resolves a conflict."""
    async with two_windows(world, client, heinzel) as w:
        await w.keys(w.one, "i", *"from the first window")
        await until(lambda: not w.mine.dirty and w.mine.base.revision > 0)
        await w.keys(w.two, "i")
        await until(lambda: w.theirs.input.text == "from the first window")
        assert w.theirs.base.revision == w.mine.base.revision

        await w.keys(w.one, *" and more")
        await until(lambda: not w.mine.dirty and w.mine.base.text.endswith("more"))
        await w.keys(w.two, *", said the second")
        await until(lambda: isinstance(w.second.screen, ChooseScreen))
        assert (await kept(client, heinzel)).text == "from the first window and more"
        await w.keys(w.two, *" (typed on)")
        await w.keys(w.two, "enter")  # Both, the choice highlighted first
        both = "from the first window and more\n\nfrom the first window, said the second (typed on)"
        await until(lambda: w.theirs.input.text == both and not w.theirs.dirty)
        assert (await kept(client, heinzel)).text == both

        await w.keys(w.one, "escape", "i")
        await until(lambda: w.mine.input.text == both)
        await w.keys(w.one, *" (agreed)")
        await until(lambda: not w.mine.dirty and w.mine.base.text.endswith("(agreed)"))
        await w.keys(w.two, *"!")
        await until(lambda: isinstance(w.second.screen, ChooseScreen))
        await w.keys(w.two, "down", "down", "enter")  # Take theirs
        await until(lambda: w.theirs.input.text == both + " (agreed)" and not w.theirs.dirty)
        assert (await kept(client, heinzel)).text == both + " (agreed)"


async def test_escape_from_a_conflict_then_escape_leaves_the_composer_without_asking_again(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """Attack pass: Escape on the conflict question, then Escape to leave the composer, asked
    again (the leaving save met the same conflict). Now the composer says its text is unsaved,
    Escape leaves it, and only the next change asks again."""
    async with two_windows(world, client, heinzel) as w:
        await w.keys(w.one, "i", *"first")
        await until(lambda: not w.mine.dirty and w.mine.base.revision > 0)
        await w.keys(w.two, "i")
        await until(lambda: w.theirs.input.text == "first")
        await w.keys(w.one, *" one")
        await until(lambda: not w.mine.dirty and w.mine.base.text == "first one")
        await w.keys(w.two, *" two")
        await until(lambda: isinstance(w.second.screen, ChooseScreen))
        await w.keys(w.two, "escape")
        await until(lambda: not isinstance(w.second.screen, ChooseScreen))
        label = str(w.theirs.query_one("#composer-mode", Static).render())
        assert "unsaved" in label and w.theirs.unsaved_conflict

        await w.keys(w.two, "escape")
        await w.two.pause(0.5)
        assert not isinstance(w.second.screen, ChooseScreen), "leaving asked again"
        assert not w.theirs.input.has_focus
        assert w.theirs.input.text == "first two" and w.theirs.dirty

        await w.keys(w.two, "i", *"!")
        await until(lambda: isinstance(w.second.screen, ChooseScreen))
        assert "unsaved" not in str(w.theirs.query_one("#composer-mode", Static).render())


async def test_issue14_item4_another_windows_save_shows_live_where_nothing_was_typed(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """issue 14 item 4 (two windows): when another window saves, a composer with no edits of
    its own shows the newer text on the shared clock's next tick, without a save or focus of
    its own; one with edits keeps them, and its next save meets the newer text as before."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        await until(lambda: composer.loaded)
        base = await kept(client, heinzel)
        other = ops.ComposerSaveRequest(
            ref=heinzel,
            base=base.revision,
            text="typed in the other window",
            mode="steer",
            outgoing=None,
            window="window-other",
        )
        assert (await client.call(ops.COMPOSER_SAVE, other)).saved
        app.ticker.tick()
        await until(lambda: composer.input.text == "typed in the other window")
        assert composer.state.mode == "steer" and not composer.dirty
        assert not composer.input.has_focus

        await pilot.press("i")
        await pilot.pause()
        newer = await kept(client, heinzel)
        again = other.model_copy(update={"base": newer.revision, "text": "theirs again"})
        assert (await client.call(ops.COMPOSER_SAVE, again)).saved
        await pilot.press(*" and mine")
        app.ticker.tick()
        await until(lambda: isinstance(app.screen, ChooseScreen))
        assert composer.input.text == "typed in the other window and mine"


async def test_issue14_item4_a_stopped_turn_gives_back_its_messages_in_their_mode(
    world: worlds.World, client: LocalClient, heinzel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """STEER stays STEER when the messages come back, also with text typed after them."""
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "400")
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
        await until(lambda: page.turn_panel.live.step == "think")
        await pilot.press("i", "ctrl+t", *"name the owners", "enter")
        await until(lambda: ("name the owners", "steer") in [c for c in [*composer_chats(page)]])
        await pilot.press(*"and the dates")
        await pilot.press("ctrl+c", "ctrl+c")
        await until(lambda: page.turn_panel.live.status == "finished")
        await until(lambda: composer.input.text == "name the owners\n\nand the dates")
        assert composer.state.mode == "steer"
        assert "STEER" in str(composer.query_one("#composer-mode").render())
        await until(lambda: not composer.dirty)
        saved = await kept(client, heinzel)
        assert (saved.text, saved.mode) == ("name the owners\n\nand the dates", "steer")


def composer_chats(page: HeinzelScreen) -> list[tuple[str, str]]:
    return [(item.message, item.mode) for item in page.inbox if item.kind == "chat"]


async def test_issue14_item4_escape_leaves_the_composer_and_never_stops_a_turn(
    world: worlds.World, client: LocalClient, heinzel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Escape in the composer leaves it; Ctrl+C twice (naming the step), K or the palette's
    "Stop the running turn…" (both asking "Stop think?") stops the turn."""
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "1500")
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)

        def live() -> LiveTurn:
            return page.turn_panel.live

        await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
        await until(lambda: live().step == "think")
        await pilot.press("i", *"half a thought", "escape")
        assert not isinstance(app.focused, ComposerArea)
        assert app.screen is page
        await pilot.pause(0.5)
        assert live().status == "running" and live().step == "think"
        assert page.query_one(Composer).input.text == "half a thought"

        await pilot.press("K")
        assert isinstance(app.screen, ConfirmScreen) and app.screen.question == "Stop think?"
        await pilot.press("enter")  # Cancel is highlighted: Enter alone keeps the turn
        await pilot.pause(0.5)
        assert live().status == "running"

        await pilot.press("i", "ctrl+c")
        assert "Press Ctrl+C again to stop think." in messages_of(app)
        await pilot.pause(0.5)
        assert live().status == "running"
        await pilot.press("ctrl+c")
        await until(lambda: live().status == "finished")
        assert live().disposition == "abandoned"

        await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
        await until(lambda: live().status == "running" and live().step == "think")
        await pilot.press("escape")
        stop = next(c for c in cockpit_commands(app) if c.title == "Stop the running turn…")
        stop.run()  # the palette's command: the same question as K
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and app.screen.question == "Stop think?"
        await pilot.press("y")
        await until(lambda: live().status == "finished")
        assert live().disposition == "abandoned"


class SavesFailWhileAway(PassThrough):
    """A transport whose composer saves find the daemon gone while ``away`` is set."""

    def __init__(self, inner: LocalClient) -> None:
        super().__init__(inner)
        self.away = False

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        if self.away and operation is ops.COMPOSER_SAVE:
            raise NotConnected()
        return await self.inner.call(operation, request)


async def test_issue14_item4_a_page_closed_while_the_kernel_is_away_keeps_its_text(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """What could not be saved when the page closed is there when the page opens again."""
    flaky = SavesFailWhileAway(client)
    app = CockpitApp(world.home, flaky)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        flaky.away = True
        await pilot.press("i", *"typed while away", "escape")
        await until(lambda: any(m.startswith("Not saved yet") for m in messages_of(app)))
        await pilot.press("escape")
        await settle()
        page = await open_page(pilot, heinzel)
        area = page.query_one(ComposerArea)
        assert area.text == "typed while away"
        flaky.away = False
        await pilot.press("i", *"!")
        await until(lambda: not page.query_one(Composer).dirty)
    assert (await kept(client, heinzel)).text == "typed while away!"


async def test_issue14_item4_quitting_while_reconnecting_keeps_the_unsent_text(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """issue 14 item 4: a cockpit quit while its daemon is away (every save finds it gone)
    keeps the typed text in the home's cockpit folder; the next cockpit's page on the heinzel
    shows it and saves it to the kernel, and the local copy goes."""
    flaky = SavesFailWhileAway(client)
    app = CockpitApp(world.home, flaky)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await open_page(pilot, heinzel)
        flaky.away = True
        await pilot.press("i", *"typed while reconnecting", "ctrl+j", *"second line")
        await pilot.press("ctrl+q")
    await settle()
    kept_file = world.home.root / "cockpit" / f"unsent-{heinzel}.json"
    assert kept_file.exists() and oct(kept_file.stat().st_mode & 0o777) == "0o600"
    assert (await kept(client, heinzel)).text == ""

    again = CockpitApp(world.home, client)
    async with again.run_test(size=SIZE) as pilot:
        await again.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        assert composer.input.text == "typed while reconnecting\nsecond line"
        await until(lambda: composer.loaded and not composer.dirty)
        assert any("unsent message from before is back" in m for m in messages_of(again))
    assert (await kept(client, heinzel)).text == "typed while reconnecting\nsecond line"
    assert not kept_file.exists()


def test_issue14_item4_reconcile_takes_rebases_or_asks() -> None:
    """What a window does whose save found a newer revision: nothing typed is ever dropped."""
    base = ComposerText(heinzel="h", revision=3, text="draft", window="w-me")
    untouched = ComposerState(text="draft")
    typed = ComposerState(text="draft, mine")
    theirs = ComposerText(heinzel="h", revision=4, text="draft, theirs", window="w-other")
    assert reconcile(base, untouched, theirs, "w-me") == "take"
    assert reconcile(base, typed, theirs, "w-me") == "conflict"
    assert reconcile(base, typed, theirs.model_copy(update={"window": "w-me"}), "w-me") == "rebase"
    only_mode = theirs.model_copy(update={"text": "draft", "mode": "steer"})
    assert reconcile(base, typed, only_mode, "w-me") == "rebase"
    assert reconcile(base, typed, theirs.model_copy(update={"text": "draft, mine"}), "w-me") == (
        "rebase"
    )
    sending = untouched.sending()
    assert sending.outgoing is not None
    first_sender = sending.outgoing.model_copy(update={"request_id": "cockpit-first"})
    sent_there = theirs.model_copy(update={"text": "draft", "outgoing": first_sender})
    assert reconcile(base, sending, sent_there, "w-me") == "take", "Enter in two windows: once"
    other_words = first_sender.model_copy(update={"message": "other"})
    two_sends = sent_there.model_copy(update={"text": "other", "outgoing": other_words})
    assert reconcile(base, sending, two_sends, "w-me") == "rebase", "two messages: each goes"
    theirs_went = two_sends.model_copy(update={"text": "", "outgoing": None, "revision": 5})
    assert reconcile(two_sends, sending, theirs_went, "w-me") == "rebase", "theirs went first"
    both = typed.resolved("both", theirs)
    assert both.text == "draft, theirs\n\ndraft, mine" and both.outgoing is None
    assert typed.resolved("theirs", theirs).text == "draft, theirs"
    assert typed.resolved("mine", theirs) == typed


def test_issue14_item4_history_walk_and_given_back_modes() -> None:
    walk = HistoryWalk()
    history = ["one", "two"]
    assert walk.older(history, "draft") == "two"
    assert walk.older(history, "two") == "one"
    assert walk.older(history, "one") is None
    assert walk.newer(history) == "two"
    assert walk.newer(history) == "draft" and not walk.walking
    assert HistoryWalk().older([], "draft") is None

    def item(message: str, mode: str, status: str) -> InboxItem:
        return InboxItem(
            request_id=f"cockpit-{message}",
            kind="chat",
            mode=mode,
            message=message,
            admitted_at=datetime(2026, 12, 1, tzinfo=UTC),
            status=status,
        )

    queue_mode = ComposerState(mode="queue")
    steered = queue_mode.given_back(
        [item("a", "steer", "steered"), item("b", "steer", "pending")], ""
    )
    assert (steered.text, steered.mode, steered.outgoing) == ("a\n\nb", "steer", None)
    mixed = ComposerState(text="typ", mode="steer").given_back(
        [item("a", "steer", "pending"), item("b", "queue", "requested")], "typed"
    )
    assert (mixed.text, mixed.mode) == ("a\n\nb\n\ntyped", "steer"), "the text on screen"
    alone = queue_mode.given_back([item("a", "steer", "pending")], "")
    assert alone.outgoing is None, "withdrawn by the kernel: it goes out under a new id"
    assert alone.mode == "steer"


async def test_attack_a_file_where_the_cockpit_folder_goes_is_one_coded_line_not_a_crash(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """``<home>/cockpit`` is a file: typing, leaving the page and quitting never crash; the
    text that cannot be kept says so (HZU235 here; the kernel's copy, kept in the same folder,
    answers HZU229)."""
    (world.home.root / "cockpit").write_text("not a folder")
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        await pilot.press("i", *"kept nowhere")
        await pilot.press("escape", "escape")
        await until(lambda: not isinstance(app.screen, HeinzelScreen))
        await settle()
        assert any(n.message.startswith("HZU235") for n in app.notices.history)
        assert composer.state.text == "kept nowhere"
    with pytest.raises(HzError) as refused:
        await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))
    assert refused.value.code == "HZU229"


async def test_fix13_the_composer_hint_keeps_steer_queue_and_esc_at_80_columns(
    world: worlds.World, client: LocalClient, heinzel: str
) -> None:
    """New-user pass (issue 13) finding 9: at 80 columns the composer's hint lost its end,
    "Ctrl+T steer/queue · Esc leaves". The whole hint shows."""
    app = CockpitApp(world.home, client)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.loaded.wait()
        await open_page(pilot, heinzel)
        await pilot.pause()
        shown = "\n".join(row_text(screen_cells(app), y) for y in range(24))
        assert "Enter sends" in shown
        assert "Ctrl+T steer/queue" in shown and "Esc leaves" in shown, shown
