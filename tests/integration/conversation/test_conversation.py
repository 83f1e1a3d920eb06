"""Talking to a heinzel: steer and queue, coalescing, stop, retry, questions, lessons."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hz_kernel.api import TurnReport
from hz_kernel.contracts import ContractVersions
from hz_kernel.engine.context import build_context
from hz_kernel.engine.wakes import Wake, request_key, schedule_key
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.observe import Observation
from hz_kernel.store.inbox import Inbox, InboxRequest
from hz_kernel.vocabulary import LessonRecorded, QuestionAsked
from tests.support.homes import World, digest_contract, make_world


async def _world(tmp_path: Path, **kernel_args: bool) -> tuple[World, Kernel, str]:
    world = make_world(tmp_path)
    kernel = await Kernel.open(Home.resolve(world.home), **kernel_args)
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    return world, kernel, made.id


async def _when_step(kernel: Kernel, heinzel_id: str, step: str | None) -> None:
    """Wait until the running turn's last finished step is ``step``."""
    for _ in range(2000):
        runner = kernel._running.get(heinzel_id)
        if runner is not None:
            held = kernel.sessions[heinzel_id]
            if held.projection.turns.get(runner.turn, {}).get("step") == step:
                return
        await asyncio.sleep(0.005)
    raise AssertionError(f"no running turn reached {step}")


async def _woken_past_gather(kernel: Kernel, heinzel_id: str) -> asyncio.Task[TurnReport]:
    """A turn woken in the background, once its gather step is done; await it for its report."""
    turn = asyncio.create_task(kernel.wake(ref=heinzel_id))
    await _when_step(kernel, heinzel_id, "gather")
    return turn


def _events(kernel: Kernel, heinzel_id: str) -> list[tuple[str, str | None, dict[str, object]]]:
    held = kernel.sessions[heinzel_id]
    return [(e.kind, e.turn, e.data) for e in held.scan.events]


async def test_steering_during_think_reaches_the_next_model_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "40")
    world, kernel, heinzel_id = await _world(tmp_path)
    async with kernel.holding(heinzel_id):
        turn = await _woken_past_gather(kernel, heinzel_id)
        await asyncio.sleep(0.05)
        admitted = await kernel.chat(ref=heinzel_id, message="shorter", mode="steer")
        assert admitted.status == "pending"
        report = await turn
        events = _events(kernel, heinzel_id)
    steered = [(t, d) for k, t, d in events if k == "turn.steered"]
    assert [d["request_id"] for _, d in steered] == [admitted.request_id]
    assert steered[0][0] == report.turn
    assert sum(1 for k, t, _ in events if k == "attempt.started" and t == report.turn) == 2
    body = (world.home / "heinzel" / heinzel_id / "turns" / f"{report.turn}.jsonl").read_text()
    assert "shorter" in body
    assert sum(1 for k, _, _ in events if k == "turn.started") == 1
    await kernel.close()


async def test_a_message_during_act_becomes_the_next_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world, kernel, heinzel_id = await _world(tmp_path)
    sent: list[asyncio.Task[object]] = []

    def during_act(seen: Observation) -> None:
        event = seen.event
        if event is not None and event.kind == "step.done" and event.data["step"] == "outcome":
            chat = kernel.chat(ref=heinzel_id, message="add the risks", mode="steer")
            sent.append(asyncio.get_running_loop().create_task(chat))

    kernel.observers.append(during_act)
    async with kernel.holding(heinzel_id):
        await kernel.wake(ref=heinzel_id)
        admitted = await sent[0]
        assert admitted.status in ("requested", "delivered")
        events = _events(kernel, heinzel_id)
    started = [(t, d) for k, t, d in events if k == "turn.started"]
    assert len(started) == 2
    assert started[1][1]["request_ids"] == [admitted.request_id]
    assert not [k for k, t, _ in events if k == "turn.steered" and t == started[0][0]]
    follow_up = world.home / "heinzel" / heinzel_id / "turns" / f"{started[1][0]}.jsonl"
    assert "add the risks" in follow_up.read_text()
    await kernel.close()


async def test_three_wakes_while_awake_coalesce_into_one_follow_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "20")
    _, kernel, heinzel_id = await _world(tmp_path)
    async with kernel.holding(heinzel_id):
        turn = await _woken_past_gather(kernel, heinzel_id)
        wakes = [
            Wake(cause="schedule", key=schedule_key(heinzel_id, "2026-11-30T09:00")),
            Wake(cause="source-changed", key=f"{heinzel_id}@notes:{'a' * 64}"),
            Wake(cause="asked", key=request_key(heinzel_id, "R9"), request_id=None),
        ]
        for wake in wakes:
            assert await kernel.run_wakes(heinzel_id, [wake]) is None
        await turn
        events = _events(kernel, heinzel_id)
    started = [d for k, _, d in events if k == "turn.started"]
    assert len(started) == 2
    assert sorted(started[1]["causes"]) == ["asked", "schedule", "source-changed"]
    assert sorted(started[1]["keys"]) == sorted(w.key for w in wakes)
    assert sum(1 for k, _, _ in events if k == "turn.requested") == 3
    await kernel.close()


RUN_WAKE = """
import asyncio, sys
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
async def main():
    kernel = await Kernel.open(Home.resolve())
    await kernel.wake(ref=sys.argv[1])
asyncio.run(main())
"""


async def test_a_message_admitted_then_the_process_killed_is_delivered_once(tmp_path: Path) -> None:
    world, kernel, heinzel_id = await _world(tmp_path)
    await kernel.close()
    Inbox(world.home / "heinzel" / heinzel_id).admit(
        InboxRequest(request_id="msg-1", heinzel=heinzel_id, message="mention the search launch")
    )
    crashed = subprocess.run(
        [sys.executable, "-c", RUN_WAKE, heinzel_id],
        env=world.env(HZ_CRASH_AT="step.done:think"),
        capture_output=True,
        timeout=120,
    )
    assert crashed.returncode == -signal.SIGKILL
    kernel = await Kernel.open(Home.resolve(world.home))
    await kernel.resume(ref=heinzel_id)
    await kernel.chat(ref=heinzel_id, message="mention the search launch", request_id="msg-1")
    async with kernel.holding(heinzel_id):
        events = _events(kernel, heinzel_id)
    carrying = [d for k, _, d in events if k == "turn.started" and "msg-1" in d["request_ids"]]
    assert len(carrying) == 1
    assert [d["disposition"] for k, _, d in events if k == "turn.finished"].count("drafted") == 2
    await kernel.close()


async def test_stop_ends_the_turn_and_keeps_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "100")
    _, kernel, heinzel_id = await _world(tmp_path)
    async with kernel.holding(heinzel_id):
        turn = await _woken_past_gather(kernel, heinzel_id)
        queued = await kernel.chat(ref=heinzel_id, message="after this: shorter", mode="queue")
        assert queued.status == "requested"
        stopped = await kernel.stop(ref=heinzel_id)
        await turn
        events = _events(kernel, heinzel_id)
    finished = [d for k, _, d in events if k == "turn.finished"]
    assert [(d["disposition"], d["reason"]) for d in finished] == [("abandoned", "stopped")]
    assert stopped.disposition == "abandoned"
    inbox = await kernel.inbox(ref=heinzel_id)
    assert [(i.message, i.status) for i in inbox.items if i.kind == "chat"] == [
        ("after this: shorter", "requested")
    ]
    await kernel.close()


async def test_retry_keeps_both_bodies_and_supersedes_the_draft(tmp_path: Path) -> None:
    world, kernel, heinzel_id = await _world(tmp_path)
    first = await kernel.wake(ref=heinzel_id)
    retried = await kernel.retry(ref=heinzel_id, hint="shorter")
    assert retried.disposition == "drafted" and retried.turn != first.turn
    turns = world.home / "heinzel" / heinzel_id / "turns"
    assert (turns / f"{first.turn}.jsonl").exists() and (turns / f"{retried.turn}.jsonl").exists()
    detail = await kernel.show(heinzel_id)
    assert sorted(d.status for d in detail.drafts) == ["pending", "superseded"]
    parent = next(t for t in detail.turns if t.turn == retried.turn)
    assert parent.parent_turn == first.turn
    assert (world.reports / "digest.md").read_text().count("<!-- hz:begin ") == 1
    await kernel.close()


async def test_a_question_is_asked_once_per_key_and_an_answer_runs_a_turn(tmp_path: Path) -> None:
    _, kernel, heinzel_id = await _world(tmp_path)
    key = f"{heinzel_id}@q:first"
    async with kernel.holding(heinzel_id) as held:
        await held.append(QuestionAsked(key=key, question="Which team is this for?"), key=key)
    row = await kernel.resolve(heinzel_id)
    assert row["pending_question"] == key and row["state"] == "waiting"
    report = await kernel.answer(ref=heinzel_id, message="Checkout", request_id="ans-1")
    assert report.disposition == "drafted"
    async with kernel.holding(heinzel_id) as held:
        asked = [e for e in held.scan.events if e.kind == "question.asked"]
        answered = [e for e in held.scan.events if e.kind == "question.answered"]
    assert len(asked) == 1 and [e.data["request_id"] for e in answered] == ["ans-1"]
    row = await kernel.resolve(heinzel_id)
    assert row["pending_question"] is None
    await kernel.close()


async def test_a_dismissed_lesson_leaves_the_prompt(tmp_path: Path) -> None:
    _, kernel, heinzel_id = await _world(tmp_path)
    async with kernel.holding(heinzel_id) as held:
        await held.append(LessonRecorded(lesson_id="L1", lesson="risks go above the summary"))
        await held.append(LessonRecorded(lesson_id="L2", lesson="no ticket numbers"))
        await kernel.dismiss(ref=heinzel_id, lesson_id="L2")
        events = held.scan.events
        compiled = ContractVersions(held.dir).read(1)[1]
        context = build_context(
            contract=compiled,
            version=1,
            events=events,
            before_seq=events[-1].seq + 1,
            lessons_seq=events[-1].seq,
            inputs=[],
            output="digest",
        )
    assert "risks go above the summary" in context.instructions
    assert "no ticket numbers" not in context.instructions
    lessons = (await kernel.show(heinzel_id)).lessons
    assert [(lesson.lesson_id, lesson.dismissed) for lesson in lessons] == [
        ("L1", False),
        ("L2", True),
    ]
    await kernel.close()


async def test_summaries_have_the_fixed_fields_and_chain(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    (world.home / "hz.toml").write_text(
        f'[documents]\nroot = "{tmp_path}"\n[heinzel]\nsummary_after_turns = 2\n'
        "summary_keep_turns = 1\n"
    )
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    for _ in range(4):
        await kernel.wake(ref=made.id)
    async with kernel.holding(made.id) as held:
        summaries = [e for e in held.scan.events if e.kind == "summary.written"]
        usage = [e for e in held.scan.events if e.kind == "usage"]
    await kernel.close()
    assert len(summaries) == 2 and len(usage) == 2
    fields = {"asset", "wants", "decisions", "open_questions", "sources", "covers_through_seq"}
    assert fields <= set(summaries[0].data)
    assert summaries[0].data["asset"].startswith("doc:reports/digest.md")
    assert summaries[1].data["previous_seq"] == summaries[0].seq
    assert "previous_seq" not in summaries[0].data
