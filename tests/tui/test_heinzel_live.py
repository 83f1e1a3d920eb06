"""The heinzel page's second half with Pilot: the live turn, the inbox and composer, the dialogs.

Every test runs a real long-lived kernel (as ``hz`` embeds it) on a home
with real documents and the offline local model; ``HZ_MODEL_DELAY_MS``
holds each streamed chunk so a turn can be watched, or stopped, mid-think.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.errors import HzError
from hz_kernel.kernel import Kernel
from hz_kernel.operations import Operation, Req, Resp
from hz_kernel.vocabulary import LessonRecorded, QuestionAsked
from hz_tui.app import CockpitApp
from hz_tui.screens.choose import ChooseScreen
from hz_tui.screens.prompt import PromptScreen
from hz_tui.turn_state import LiveTurn
from hz_tui.widgets.composer import Composer, settle
from hz_tui.widgets.effect_ledger import EffectLedger
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.inbox import InboxList
from hz_tui.widgets.lessons import LessonList
from hz_tui.widgets.pending import PendingPanel
from hz_tui.widgets.step_line import StepLine
from hz_tui.widgets.stream_view import StreamView
from hz_tui.widgets.timeline import Timeline
from tests.tui import worlds
from tests.tui.kernels import PassThrough, embedded_client
from tests.tui.test_cockpit import SIZE, open_page, text_of, until


@pytest.fixture
async def world(tmp_path: Path) -> worlds.World:
    made = worlds.make_world(tmp_path)
    made.add_note("wednesday.md", "# Wednesday\n" + worlds.LONG_NOTES)
    return made


@pytest.fixture
async def client(world: worlds.World) -> AsyncIterator[LocalClient]:
    async with embedded_client(world) as opened:
        yield opened


async def new_heinzel(client: LocalClient, world: worlds.World) -> str:
    return await worlds.add_heinzel(client.kernel, world, "notes-digest", wake=False)


class LosesTheFirstChatAnswer(PassThrough):
    """A transport that delivers the first chat to the kernel and loses its answer.

    That is what a dropped connection does: the kernel has the message, the
    cockpit never hears so. Everything else passes through untouched.
    """

    def __init__(self, inner: LocalClient) -> None:
        super().__init__(inner)
        self.lost = False

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        result = await self.inner.call(operation, request)
        if operation is ops.CHAT and not self.lost:
            self.lost = True
            raise HzError("HZD050", "the connection dropped before the answer came")
        return result


def messages_of(app: CockpitApp) -> list[str]:
    return [n.message for n in app.notices.history]


async def test_live_turn_streams_its_steps_output_and_effects(
    world: worlds.World, client: LocalClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    heinzel = await new_heinzel(client, world)
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "40")
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        panel = page.turn_panel
        assert "No turn has run yet." in text_of(panel.query_one(StepLine))
        await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
        stream = panel.query_one(StreamView)
        await until(lambda: panel.live.step == "think" and "### Notes" in stream.text)
        assert panel.live.status == "running"
        assert "● think (request 1)" in text_of(panel.query_one(StepLine))
        await until(lambda: panel.live.status == "finished")
        await pilot.pause(0.2)
        assert "item 13 of the long week" in stream.text
        assert "✓ finish" in text_of(panel.query_one(StepLine))
        ledger = panel.query_one(EffectLedger)
        assert ledger.row_count == 1
        assert [str(cell) for cell in ledger.get_row_at(0)][::2] == [
            "documents.place_draft",
            "done: draft placed",
        ]
        assert stream.following and stream.max_scroll_y > 0
        stream.focus()
        await pilot.press("home")  # the user scrolls up: only that stops the follow
        await pilot.pause()
        assert not stream.following
        await pilot.press("G")
        await pilot.pause()
        assert stream.following and stream.scroll_y == stream.max_scroll_y


async def test_a_lost_acknowledgement_is_resent_under_the_same_request_id(
    world: worlds.World, client: LocalClient
) -> None:
    heinzel = await new_heinzel(client, world)
    flaky = LosesTheFirstChatAnswer(client)
    app = CockpitApp(world.home, flaky)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        composer = page.query_one(Composer)
        await pilot.press("i", *"add dates")
        await pilot.press("ctrl+t")
        assert composer.state.mode == "steer"
        await pilot.press("enter")
        await until(lambda: any(m.startswith("Not sent") for m in messages_of(app)))
        saved = await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))
        assert saved.outgoing is not None and saved.text == "add dates"
        first_id = saved.outgoing.request_id
        await pilot.press("enter")
        await until(lambda: composer.state.outgoing is None and composer.input.text == "")
        inbox = await client.call(ops.INBOX, ops.HeinzelRef(ref=heinzel))
        chats = [item for item in inbox.items if item.kind == "chat"]
        assert [(c.request_id, c.message, c.mode) for c in chats] == [
            (first_id, "add dates", "steer")
        ]
        kept = await client.call(ops.COMPOSER, ops.HeinzelRef(ref=heinzel))
        assert (kept.text, kept.outgoing, kept.mode) == ("", None, "steer")


async def test_stop_by_ctrl_c_twice_and_the_queue_comes_back(
    world: worlds.World, client: LocalClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    heinzel = await new_heinzel(client, world)
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "400")
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)

        def live() -> LiveTurn:
            return page.turn_panel.live

        await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
        await until(lambda: live().step == "think")
        await pilot.press("ctrl+c")
        assert "Press Ctrl+C again to stop think." in messages_of(app)
        assert live().status == "running"
        await pilot.press("ctrl+c")
        await until(lambda: live().status == "finished")
        assert live().disposition == "abandoned"

        await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
        await until(lambda: live().status == "running" and live().step == "think")
        await pilot.press("i", *"owners", "enter")
        await until(lambda: "owners" in text_of(page.query_one(InboxList)))
        composer = page.query_one(Composer)
        await until(lambda: composer.input.text == "")
        await pilot.press("ctrl+c", "ctrl+c")
        await until(lambda: live().status == "finished")
        assert live().disposition == "abandoned"
        await until(lambda: composer.input.text == "owners")
        # Withdrawn by the stop (s6 item 1): it goes out again only by Enter, under a new id.
        assert composer.state.outgoing is None and composer.state.mode == "queue"
        inbox = await client.call(ops.INBOX, ops.HeinzelRef(ref=heinzel))
        assert [i.message for i in inbox.items if i.kind == "chat"] == []
        await pilot.press("ctrl+t", "ctrl+t", *" now")
    await settle()
    reopened = CockpitApp(world.home, client)
    async with reopened.run_test(size=SIZE) as pilot:
        await reopened.loaded.wait()
        page = await open_page(pilot, heinzel)
        await until(lambda: page.query_one(Composer).input.text == "owners now")


async def test_answer_retry_and_dismiss_through_dialogs(
    world: worlds.World, client: LocalClient
) -> None:
    heinzel = await new_heinzel(client, world)
    kernel = client.kernel
    turn = "01JC0CKP1T0000000100000077"
    question = QuestionAsked(key=f"{heinzel}@q:{turn}", question="Who owns the pager: Ana or Bo?")
    await kernel.append(heinzel, question, turn=turn)
    await kernel.append(heinzel, LessonRecorded(lesson_id="les-1", lesson="Risks go first."))
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        await until(lambda: "Who owns the pager" in text_of(page.query_one(PendingPanel)))
        await pilot.press("y")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"Bo", "enter")
        await until(lambda: "Who owns the pager" not in text_of(page.query_one(PendingPanel)))
        await pilot.press("t")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"short", "enter")
        timeline = page.query_one(Timeline)
        await until(
            lambda: any(
                str(timeline.get_row_at(i)[1]) == "retry" for i in range(timeline.row_count)
            ),
            timeout=10,
        )
        await pilot.press("D")
        assert isinstance(app.screen, ChooseScreen)
        await pilot.press("enter")
        await until(lambda: "dismissed Risks go first." in text_of(page.query_one(LessonList)))
        await pilot.press("D")
        assert "No lesson to dismiss." in messages_of(app)
    spine = world.home.heinzel_dir(heinzel) / "session.jsonl"
    kinds = [orjson.loads(line)["kind"] for line in spine.read_bytes().splitlines()]
    assert "question.answered" in kinds and "lesson.dismissed" in kinds


async def test_the_page_says_which_model_the_heinzel_uses(tmp_path: Path) -> None:
    """issue 12 item 7: the page shows the model, and that the home's default chose it."""
    world = worlds.make_world(tmp_path)
    settings = tmp_path / "home" / "hz.toml"
    settings.write_text(settings.read_text() + '[model]\ndefault = "ollama:llama3"\n')
    client = LocalClient(await Kernel.open(world.home, long_lived=True))
    try:
        heinzel = await new_heinzel(client, world)
        app = CockpitApp(world.home, client)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            page = await open_page(pilot, heinzel)
            facts = text_of(page.query_one(Facts))
            assert "ollama:llama3 · the home's default" in facts
            assert "stand-in" not in facts
    finally:
        await client.close()


async def test_the_page_says_when_the_heinzel_runs_on_the_local_stand_in(tmp_path: Path) -> None:
    """issue 15 item 3: on the local model the page says, quietly, that it is an offline
    stand-in and which setting switches to a real model; a real model gets no such mark."""
    world = worlds.make_world(tmp_path)
    client = LocalClient(await Kernel.open(world.home, long_lived=True))
    try:
        heinzel = await new_heinzel(client, world)
        app = CockpitApp(world.home, client)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            page = await open_page(pilot, heinzel)
            facts = text_of(page.query_one(Facts))
            assert "local · the home's default · offline stand-in" in " ".join(facts.split())
            assert "a real model: [model] default in hz.toml" in " ".join(facts.split())
    finally:
        await client.close()
