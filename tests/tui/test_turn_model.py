"""The second half's models on real files: live turn, body tail, composer store, diff, toasts."""

from __future__ import annotations

import stat
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from hz_kernel.api import ComposerText, DraftReview
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store import composer as composer_file
from hz_kernel.vocabulary import (
    AttemptRetry,
    AttemptStarted,
    DraftPlaced,
    EffectDone,
    EffectFailed,
    EffectStarted,
    NoticeRaised,
    StepDone,
    TurnFinished,
    TurnSkipped,
    TurnStarted,
)
from hz_tui import notices, review, rows
from hz_tui.composer_store import ComposerState
from hz_tui.tail import BodyTail, SpineTail
from hz_tui.turn_state import TurnFollower, chunk_text, short_key
from hz_tui.watcher import SpineWatcher
from tests.tui import worlds

TURN_A = "01JC0CKP1T0000000100000001"
TURN_B = "01JC0CKP1T0000000100000002"


async def test_follower_tracks_steps_attempts_effects_and_the_newest_turn(home: Home) -> None:
    kernel = await Kernel.open(home)
    try:
        heinzel = await kernel.create_heinzel("followed")
        spine = home.heinzel_dir(heinzel) / "session.jsonl"
        follower = TurnFollower()
        tail = SpineTail(spine)
        follower.apply(tail.read_new().lines)
        assert follower.current.turn is None and follower.current.step is None

        async def add(payload: object, turn: str | None = TURN_A, key: str | None = None) -> bool:
            await kernel.append(heinzel, payload, turn=turn, key=key)  # type: ignore[arg-type]
            return follower.apply(tail.read_new().lines)

        assert await add(TurnStarted(cause="asked", keys=["k"], contract_version=1))
        assert (follower.current.status, follower.current.step) == ("running", "gather")
        assert await add(StepDone(step="gather"))
        assert await add(AttemptStarted(step="think", attempt=1, model="local"))
        assert await add(AttemptRetry(step="think", attempt=2, delay_ms=1500, error="429"))
        live = follower.current
        assert (live.step, live.attempt) == ("think", 2)
        assert live.attempt_note == "retry in 1500 ms: 429"
        key = f"{heinzel}@v1@k@doc:a.md"
        assert await add(EffectStarted(key=key, effect="documents.place_draft"), key=key)
        assert live.effects[key].status == "started"
        assert await add(EffectDone(key=key, hash="h"), key=key)
        draft = DraftPlaced(key=key, asset="doc:a.md", hash="h", size=1, contract_version=1)
        assert await add(draft, key=key)
        other = f"{heinzel}@v1@k@doc:b.md"
        assert await add(EffectFailed(key=other, error="disk full"), key=other)
        assert [(e.status, e.detail) for e in live.effects.values()] == [
            ("done", "draft placed"),
            ("failed", "disk full"),
        ]
        assert short_key(key) == "v1@k@doc:a.md"
        assert await add(TurnFinished(disposition="drafted", report="one section"))
        assert (live.status, live.step, live.disposition) == ("finished", None, "drafted")
        skipped = TurnSkipped(causes=["schedule"], keys=["s"], reason="nothing-moved")
        assert not await add(skipped, turn=TURN_B)
        assert follower.current is live
        assert await add(TurnStarted(cause="schedule", keys=["n"], contract_version=1), TURN_B)
        assert follower.current.turn == TURN_B and not follower.current.effects
    finally:
        await kernel.close()


async def test_a_window_before_the_end_starts_inside_a_long_spine(home: Home) -> None:
    kernel = await Kernel.open(home)
    try:
        heinzel = await kernel.create_heinzel("long-lived")
        for _ in range(200):
            await kernel.append(heinzel, StepDone(step="gather"))
        await kernel.append(
            heinzel, TurnStarted(cause="asked", keys=["k"], contract_version=1), turn=TURN_A
        )
        await kernel.append(heinzel, StepDone(step="gather"), turn=TURN_A)
    finally:
        await kernel.close()
    spine = home.heinzel_dir(heinzel) / "session.jsonl"
    tail = SpineTail.near_end(spine, 2048)
    assert 0 < tail.offset < spine.stat().st_size
    lines = tail.read_new().lines
    assert lines and lines[-1].seq == 203 and len(lines) < 20
    follower = TurnFollower()
    follower.apply(lines)
    assert (follower.current.turn, follower.current.step) == (TURN_A, "think")


def test_body_tail_reads_chunks_by_offset_and_waits_for_whole_records(tmp_path: Path) -> None:
    body = BodyTail.of_turn(tmp_path, TURN_A)
    assert not body.exists() and body.read_new() == []
    body.path.parent.mkdir()
    first = orjson.dumps({"ts": "t", "type": "chunk", "text": "## Dig"}) + b"\n"
    second = orjson.dumps({"ts": "t", "type": "chunk", "text": "est\n"}) + b"\n"
    body.path.write_bytes(first + b'{"ts": "t", "type": "context"}\n' + second[:10])
    assert chunk_text(body.read_new()) == "## Dig"
    with body.path.open("ab") as handle:
        handle.write(second[10:] + b"not json\n")
    assert chunk_text(body.read_new()) == "est\n"
    assert body.read_new() == []


def test_composer_keeps_one_request_id_per_message_until_acknowledged(home: Home) -> None:
    heinzel = "hz-01JC0CKP1T0000000000000001"
    typed = ComposerState(text="make it shorter", mode="steer")
    sending = typed.sending()
    assert sending.outgoing is not None and sending.outgoing.mode == "steer"
    assert sending.sending() is sending
    saved = composer_file.update(
        home.root, heinzel, lambda now: now.model_copy(update=dict(sending))
    )
    assert saved.revision == 1
    path = composer_file.composer_path(home.root, heinzel)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    reloaded = ComposerState.of(composer_file.read_composer(home.root, heinzel))
    assert reloaded == sending
    assert reloaded.sending().outgoing == sending.outgoing
    edited = reloaded.model_copy(update={"text": "make it much shorter"}).sending()
    assert edited.outgoing is not None
    assert edited.outgoing.request_id != sending.outgoing.request_id
    later = sending.model_copy(update={"text": "make it shorter\nand typed more"})
    assert later.acknowledged(sending.outgoing.request_id).text == later.text
    assert sending.acknowledged("cockpit-other") == sending
    done = sending.acknowledged(sending.outgoing.request_id)
    assert done.text == "" and done.outgoing is None
    path.write_text("{not json")
    with pytest.raises(HzError) as unreadable:  # issue 14 item 4: never taken for revision 0
        composer_file.read_composer(home.root, heinzel)
    assert unreadable.value.code == "HZU229"
    path.unlink()
    assert composer_file.read_composer(home.root, heinzel) == ComposerText(heinzel=heinzel)


def test_composer_that_cannot_be_saved_is_a_coded_error(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with pytest.raises(HzError) as caught:
        composer_file.update(blocked, "hz-01JC0CKP1T0000000000000001", lambda now: now)
    assert caught.value.code == "HZS081"


def test_issue14_item3_the_review_pane_compares_with_the_last_approved_text_or_as_placed() -> None:
    draft = DraftReview(
        key="k",
        heinzel="hz-x",
        heinzel_name="notes-digest",
        asset="doc:reports/d.md#digest",
        path="/docs/reports/d.md",
        status="edited",
        placed_text="## Digest\n- fixed the login bug\n- shipped search\n",
        current_text="## Digest\n- fixed the login bug\n- shipped fuzzy search\n",
        approved_text="## Digest\n- fixed the login bug\n",
        approved_at="2026-11-24T10:00:00Z",
    )
    palette = rows.Palette()
    edits = review.compare(draft, "placed")
    unified = Console(width=100, record=True)
    unified.print(review.unified(edits, palette, ("as placed", "in the document now")))
    shown = unified.export_text()
    assert "   3 - - shipped search" in shown and "   3 + - shipped fuzzy search" in shown
    since = review.compare(draft, "approved")
    assert (since.removed, since.added) == (0, 1)
    header = Console(width=100, record=True)
    header.print(review.render_review(draft, "approved", since, palette, wide=False))
    text = header.export_text()
    assert "since last approved (2026-11-24)" in text and "you edited it" in text
    first = draft.model_copy(update={"approved_text": None, "approved_note": "never approved"})
    assert review.compare(first, "approved").added == 3
    same = draft.model_copy(update={"current_text": draft.placed_text, "status": "placed"})
    assert not review.compare(same, "placed").changed


def test_issue14_item3_editor_opens_at_the_drafts_line_in_each_editors_dialect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "code --wait")
    assert review.editor_command("/d.md") == ["code", "--wait", "/d.md"]
    assert review.editor_command("/d.md", 7) == ["code", "--wait", "--goto", "/d.md:7"]
    for editor in ("vi", "vim", "/usr/bin/nvim", "nano", "emacs -nw", "emacsclient -t"):
        monkeypatch.setenv("EDITOR", editor)
        assert review.editor_command("/d.md", 7)[-2:] == ["+7", "/d.md"]
    monkeypatch.setenv("EDITOR", "hx")
    assert review.editor_command("/d.md", 7) == ["hx", "/d.md:7"]
    monkeypatch.setenv("VISUAL", "nvim")
    assert review.editor_command("/d.md") == ["nvim", "/d.md"]


async def test_toasts_for_a_landed_draft_and_a_failed_turn(home: Home) -> None:
    kernel = await Kernel.open(home)
    try:
        heinzel = await kernel.create_heinzel("noisy")
        watcher = SpineWatcher(home.heinzel_root)
        watcher.prime(home.heinzel_ids())
        draft = DraftPlaced(
            key="k", asset="doc:reports/w.md#x", hash="h", size=1, contract_version=1
        )
        await kernel.append(heinzel, draft, turn=TURN_A)
        await kernel.append(heinzel, TurnFinished(disposition="drafted"), turn=TURN_A)
        await kernel.append(
            heinzel, TurnFinished(disposition="failed", reason="stream_truncated"), turn=TURN_B
        )
        nudge = "report needs noisy's row approved by Fri 30 Oct 12:00 UTC (in 1 h 0 min)"
        await kernel.append(heinzel, NoticeRaised(key="flow:nudge:x", notice=nudge))
    finally:
        await kernel.close()
    spine = str(home.heinzel_dir(heinzel) / "session.jsonl")
    batch = watcher.collect([(1, spine)])  # type: ignore[list-item]
    toasts = notices.toasts_for(batch, {heinzel: "noisy"})
    assert [(t.severity, t.message) for t in toasts] == [
        ("information", "noisy: a draft landed in reports/w.md#x (F4 to review)"),
        ("error", "noisy: a turn failed: stream_truncated"),
        ("warning", f"noisy: {nudge}"),
    ]


async def test_world_documents_carry_a_tag_line_per_draft(tmp_path: Path) -> None:
    world = await worlds.build(tmp_path, names=("notes-digest",))
    assert worlds.TAG in world.document("notes-digest").read_text()
