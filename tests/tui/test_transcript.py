"""Issue 14 item 2: transcripts and the conversation, with Pilot on a real embedded kernel.

Turns are run by a real long-lived ``Kernel`` with the offline local model;
``HZ_MODEL_RECORD_FILE`` makes that model write down every request it
received, so the context a transcript shows is compared with what the model
was really given, not with what hz meant to send.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from textual.screen import Screen

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_tui.app import CockpitApp
from hz_tui.screens.conversation import ConversationScreen
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.screens.transcript import TranscriptScreen
from hz_tui.transcript import EXPIRED
from hz_tui.widgets.timeline import Timeline
from hz_tui.widgets.transcript_view import TranscriptView
from tests.tui import worlds
from tests.tui.kernels import embedded_client
from tests.tui.test_cockpit import SIZE, open_page, until
from tests.tui.test_terminals import key_bar_text

S = TypeVar("S", bound=Screen[Any])


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> worlds.World:
    made = worlds.make_world(tmp_path)
    settings = made.root / "home" / "hz.toml"
    settings.write_text(
        settings.read_text() + "[heinzel]\nsummary_after_turns = 2\nsummary_keep_turns = 1\n"
    )
    monkeypatch.setenv("HZ_MODEL_RECORD_FILE", str(tmp_path / "received.jsonl"))
    return made


@pytest.fixture
async def client(world: worlds.World) -> AsyncIterator[LocalClient]:
    async with embedded_client(world) as opened:
        yield opened


def received(world: worlds.World) -> list[dict[str, Any]]:
    """Every request the local model received, in order."""
    path = world.root / "received.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def settled(client: LocalClient, heinzel: str, turns: int) -> str:
    """Wait until the heinzel has run ``turns`` turns and none runs; the newest turn's id."""
    for _ in range(2000):
        detail = await client.call(ops.SHOW, ops.HeinzelRef(ref=heinzel))
        if len(detail.turns) >= turns and all(t.status != "running" for t in detail.turns):
            return max(detail.turns, key=lambda t: t.seq).turn
        await asyncio.sleep(0.01)
    raise AssertionError(f"{turns} turns never settled")


async def third_turn(client: LocalClient, world: worlds.World) -> str:
    """A heinzel with a draft, a lesson (from a rejection's reason) and a summary; the id of
    its third turn, whose context holds every kind of piece."""
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest")
    await settled(client, heinzel, 1)
    await client.call(
        ops.REJECT, ops.RejectRequest(ref="notes-digest", reason="Leave out ticket numbers.")
    )
    await settled(client, heinzel, 2)
    await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
    return await settled(client, heinzel, 3)


def shown(view: TranscriptView, block: str) -> str:
    """The text of one block, from the lines the view draws."""
    return "\n".join(line.text for line in view.lines if line.block == block)


async def open_transcript(pilot: Any, page: HeinzelScreen, turn: str) -> TranscriptScreen:
    """Select ``turn`` in the timeline and press Enter, as a user does."""
    timeline = page.query_one(Timeline)
    timeline.focus()
    await pilot.pause()
    timeline.move_cursor(row=timeline.get_row_index(turn))
    await pilot.press("enter")
    screen = await opened(pilot, TranscriptScreen)
    await until(lambda: screen.model.loaded and screen.model.turn == turn)
    await pilot.pause()
    return screen


async def opened(pilot: Any, kind: type[S]) -> S:
    """The screen of ``kind`` a key or an action opened, once it is on top and drawn."""
    await until(lambda: isinstance(pilot.app.screen, kind))
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, kind)
    return screen


def hold_the_model(world: worlds.World, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file the local model waits on mid-think while it exists (``HZ_MODEL_HOLD_FILE``);
    unlinking it lets the turn go on."""
    hold = world.root / "hold"
    hold.touch()
    monkeypatch.setenv("HZ_MODEL_HOLD_FILE", str(hold))
    return hold


async def thinking_page(pilot: Any, client: LocalClient, heinzel: str) -> HeinzelScreen:
    """The heinzel's page, opened, with a turn woken and in think."""
    page = await open_page(pilot, heinzel)
    await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
    await until(lambda: page.turn_panel.live.step == "think")
    return page


async def test_issue14_item2_a_past_turn_shows_the_context_exactly_as_the_model_received_it(
    world: worlds.World, client: LocalClient
) -> None:
    turn = await third_turn(client, world)
    think = [r for r in received(world) if r["user_texts"][-1].startswith("<inputs")][-1]
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, world.ids["notes-digest"])
        screen = await open_transcript(pilot, page, turn)
        view = screen.view
        context = next(r for r in screen.model.records if r["type"] == "context")
        parts = [p["part"] for p in context["parts"]]
        assert parts == ["framing", "contract", "lessons"]
        instructions = "\n\n".join(shown(view, f"context0.{part}") for part in parts)
        assert instructions == think["instructions"]
        messages = [
            shown(view, f"context0.message{n + 1}") for n in range(len(think["user_texts"]))
        ]
        assert messages == think["user_texts"]
        assert context["labels"][:2] == ["summary", "history"]
        assert "Leave out ticket numbers" in shown(view, "context0.lessons")
        text = view.text_shown()
        assert "contract version 1" in text and "## Contract: notes-digest (version 1)" in text
        assert "A summary (seq" in shown(view, "summary-note")
        assert "replaced the history through seq" in shown(view, "summary-note")
        assert "→ request 1\n" in text and "← answer to request 1" in text
        inputs = r"^notes · files:glob · fingerprint [0-9a-f]{16} · \d+ bytes · (moved|unchanged)$"
        assert re.match(inputs, shown(view, "inputs"))
        assert "draft placed in doc:reports/notes-digest.md#digest" in text
        assert "tokens" in shown(view, "cost")
        await until(lambda: not screen.reading)
        await pilot.pause()
        assert view.max_scroll_y > 0 and view.scroll_y == 0  # a past turn opens at its top
        assert not view.following
        await pilot.press("escape")
        assert app.screen is page


async def test_issue14_item2_slash_searches_the_transcript_n_and_shift_n_walk_the_matches(
    world: worlds.World, client: LocalClient
) -> None:
    turn = await third_turn(client, world)
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, world.ids["notes-digest"])
        screen = await open_transcript(pilot, page, turn)
        view = screen.view
        await pilot.press("slash", *"LOGIN BUG", "enter")
        assert len(view.matches) >= 2
        assert view.current is not None
        first = view.current
        row = view.row_of(view.matches[first])
        assert view.scroll_y <= row < view.scroll_y + view.size.height
        line = view.lines[view.matches[first].line].text
        assert "login bug" in line[view.matches[first].start : view.matches[first].end + 1]
        status = str(screen.query_one("#search-status").render())
        assert f"{first + 1} of {len(view.matches)} matches" in status
        await pilot.press("n")
        assert view.current == (first + 1) % len(view.matches)
        await pilot.press("N")
        assert view.current == first
        await pilot.press("N")
        assert view.current == (first - 1) % len(view.matches)
        strip = view.render_line(view.row_of(view.matches[view.current]) - round(view.scroll_y))
        current = view.get_component_rich_style("transcript--current")
        assert any(segment.style and segment.style.bgcolor == current.bgcolor for segment in strip)
        await pilot.press("slash", *" nowhere in it", "enter")
        assert view.matches == []
        assert "no match" in str(screen.query_one("#search-status").render())


async def test_issue14_search_finds_a_phrase_the_source_text_broke_over_two_lines(
    world: worlds.World, client: LocalClient
) -> None:
    """issue 14 item 2 (search): a phrase split by a line break of the record ("login bug" at
    the end of one note, "- shipped" at the start of the next) is found and marked on both
    lines; the spaces of the query stand for the break."""
    turn = await third_turn(client, world)
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, world.ids["notes-digest"])
        screen = await open_transcript(pilot, page, turn)
        view = screen.view
        await pilot.press("slash", *"LOGIN BUG - shipped", "enter")
        assert view.matches, str(screen.query_one("#search-status").render())
        match = view.matches[view.current or 0]
        assert match.end_line == match.line + 1
        assert view.lines[match.line].text[match.start :] == "login bug"
        assert view.lines[match.end_line].text[: match.end] == "- shipped"
        current = view.get_component_rich_style("transcript--current")
        for number in (match.line, match.end_line):
            strip = view.render_line(view.first_row[number] - round(view.scroll_y))
            marked = "".join(
                s.text for s in strip if s.style and s.style.bgcolor == current.bgcolor
            )
            assert marked in ("login bug", "- shipped")


async def test_issue14_item2_a_live_turns_transcript_follows_it_as_it_runs(
    world: worlds.World, client: LocalClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transcript opened while the model is held mid-think shows the turn so far, then
    takes in the answer, the outcome and the finish without being opened again."""
    world.add_note("wednesday.md", "# Wednesday\n" + worlds.LONG_NOTES)
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest", wake=False)
    hold = hold_the_model(world, monkeypatch)
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await thinking_page(pilot, client, heinzel)
        page.action_transcript()
        screen = await opened(pilot, TranscriptScreen)
        view = screen.view
        await until(lambda: "→ request 1 asked" in view.text_shown())
        assert screen.model.running and "running" in view.lines[0].text
        assert "Context as the model got it" in view.text_shown()
        assert "<inputs" in view.text_shown() and "← answer" not in view.text_shown()
        hold.unlink()
        await until(lambda: not screen.model.running)
        await until(lambda: "← answer to request 1" in view.text_shown())
        assert "drafted" in view.lines[0].text
        assert "item 13 of the long week" in shown(view, "outcome.text")
        assert "draft placed in" in view.text_shown()
        assert view.following and view.scroll_y == view.max_scroll_y


async def test_issue14_item2_the_conversation_shows_each_message_steered_or_queued(
    world: worlds.World, client: LocalClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two messages sent while the model is held mid-think: the steer reaches that turn, the
    queued one waits and then reaches the next; the conversation page (``m``) follows both."""
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest", wake=False)
    hold = hold_the_model(world, monkeypatch)
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await thinking_page(pilot, client, heinzel)
        running = page.turn_panel.live.turn
        await client.call(
            ops.CHAT, ops.ChatRequest(ref=heinzel, message="mention the dates", mode="steer")
        )
        await client.call(
            ops.CHAT, ops.ChatRequest(ref=heinzel, message="then a shorter one", mode="queue")
        )
        await pilot.press("m")
        screen = await opened(pilot, ConversationScreen)
        view = screen.view
        await until(lambda: "QUEUE · waiting to be delivered" in view.text_shown())
        hold.unlink()

        def newest() -> str:
            turns = page.detail.turns if page.detail else []
            return max(turns, key=lambda t: t.seq).turn if turns else ""

        await until(lambda: newest() != running, timeout=30)
        later = newest()
        await until(lambda: f"queued → turn {later}" in view.text_shown())
        text = view.text_shown()
        assert f"STEER · steered into turn {running}" in text
        assert f"QUEUE · queued → turn {later}" in text
        assert text.index("mention the dates") < text.index("then a shorter one")
        await pilot.press("slash", *"shorter", "enter")
        assert len(view.matches) == 1


async def test_issue14_item2_an_expired_body_shows_what_the_spine_still_knows(
    world: worlds.World, client: LocalClient
) -> None:
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest")
    turn = await settled(client, heinzel, 1)
    (world.home.heinzel_dir(heinzel) / "turns" / f"{turn}.jsonl").unlink()
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        screen = await open_transcript(pilot, page, turn)
        text = screen.view.text_shown()
        assert EXPIRED in text
        assert "notes · fingerprint" in shown(screen.view, "inputs")
        assert "draft: Drafted digest" in shown(screen.view, "outcome")
        assert "tokens" in shown(screen.view, "cost")
        assert "draft placed in" in text


async def test_enter_on_the_page_opens_the_highlighted_turn_wherever_the_focus_is(
    world: worlds.World, client: LocalClient
) -> None:
    """A new user's way in: Enter on a heinzel's page (the composer aside) opens the
    timeline's highlighted turn, without first moving the focus to the timeline."""
    turn = await third_turn(client, world)
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, world.ids["notes-digest"])
        timeline = page.query_one(Timeline)
        await until(lambda: timeline.row_count == 3)
        timeline.move_cursor(row=timeline.get_row_index(turn))
        page.set_focus(None)
        await pilot.press("enter")
        screen = await opened(pilot, TranscriptScreen)
        await until(lambda: screen.model.loaded and screen.model.turn == turn)


@pytest.mark.parametrize("size", [SIZE, (80, 24)], ids=["120x40", "80x24"])
async def test_s6_the_arrows_and_j_k_walk_the_turns_from_where_the_page_opens(
    world: worlds.World, client: LocalClient, size: tuple[int, int]
) -> None:
    """New-user pass, session 6: on a heinzel's page j/k never moved the timeline and ↑/↓
    only scrolled the page, so a past turn took Tabs to reach. Now ↓/j and ↑/k walk the
    turns from wherever the page's focus is as it opens (the composer aside), the timeline
    comes into view (at 80×24 it starts below the fold), and Enter opens the turn walked to;
    the key bar names it."""
    turn = await third_turn(client, world)  # the newest
    app = CockpitApp(world.home, client)
    async with app.run_test(size=size) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, world.ids["notes-digest"])
        timeline = page.query_one(Timeline)
        await until(lambda: timeline.row_count == 3)
        assert timeline.cursor_row == 0 and not timeline.has_focus
        await pilot.press("j", "down")
        await pilot.pause()
        assert timeline.cursor_row == 2
        assert page.query_one("#page").region.contains_region(timeline.region) or (
            timeline.region.y >= page.query_one("#page").region.y
            and timeline.region.y < page.query_one("#page").region.bottom
        ), "the timeline is on screen"
        await pilot.press("k")
        await pilot.pause()
        assert timeline.cursor_row == 1
        if size == SIZE:
            assert "Transcript" in key_bar_text(app)
        await pilot.press("j")
        await pilot.pause()
        walked_to = timeline.coordinate_to_cell_key(timeline.cursor_coordinate).row_key.value
        assert walked_to != turn, "the newest turn is first; j walked to an older one"
        await pilot.press("enter")
        screen = await opened(pilot, TranscriptScreen)
        await until(lambda: screen.model.loaded and screen.model.turn == walked_to)


async def test_attack_the_conversation_shows_hidden_and_control_characters_inert(
    world: worlds.World, client: LocalClient
) -> None:
    """A message with an escape sequence, a zero-width space and a right-to-left override:
    the conversation page shows each as a visible mark, never the raw character, and
    search still finds the words around them."""
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest", wake=False)
    said = "hi \x1b[2J ad\u200bmin \u202eRTL\u202c end"
    await client.call(ops.CHAT, ops.ChatRequest(ref=heinzel, message=said, mode="queue"))
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await open_page(pilot, heinzel)
        await pilot.press("m")
        screen = await opened(pilot, ConversationScreen)
        view = screen.view
        await until(lambda: "RTL" in view.text_shown())
        shown = view.text_shown()
        assert "hi ␛[2J ad\ufffdmin \ufffdRTL\ufffd end" in shown
        assert not any(c in shown for c in "\x1b\u200b\u202e\u202c")
        await pilot.press("slash", *"end", "enter")
        assert len(view.matches) == 1


async def test_the_conversation_says_when_the_turn_a_message_reached_was_stopped(
    world: worlds.World, client: LocalClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack pass: a message whose turn the user then stopped read as if that turn had
    answered it; the conversation now says the turn was stopped."""
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest", wake=False)
    hold = hold_the_model(world, monkeypatch)
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        await client.call(
            ops.CHAT, ops.ChatRequest(ref=heinzel, message="write it shorter", mode="queue")
        )
        await until(lambda: page.turn_panel.live.step == "think")
        stopped = page.turn_panel.live.turn
        await client.call(ops.STOP, ops.StopRequest(ref=heinzel))
        hold.unlink()
        await pilot.press("m")
        view = (await opened(pilot, ConversationScreen)).view
        await until(lambda: "which you stopped" in view.text_shown())
        assert f"queued → turn {stopped}, which you stopped" in view.text_shown()


async def test_h_in_a_transcript_hides_the_turn_from_the_model_with_a_line_in_its_place(
    world: worlds.World, client: LocalClient
) -> None:
    """Issue 15 item 5: ``h`` asks what the model should read in the turn's place and records
    it as a ``context.edit``; the next turn's history shows that line, not the turn."""
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest")
    turn = await settled(client, heinzel, 1)
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, heinzel)
        await open_transcript(pilot, page, turn)
        await pilot.press("h")
        await until(lambda: "Hide turn" in str(getattr(app.screen, "heading", "")))
        await pilot.press(*"a dry run", "enter")
        spine = world.home.heinzel_dir(heinzel) / "session.jsonl"
        await until(lambda: b'"context.edit"' in spine.read_bytes())
    await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
    await settled(client, heinzel, 2)
    texts = [text for request in received(world) for text in request["user_texts"]]
    assert any("(the user's note) a dry run" in text for text in texts), texts[-3:]
