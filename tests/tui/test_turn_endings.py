"""Issue 14 item 7, correct state: how a turn ended, and what a proposed heinzel waits for.

Turns run in a real kernel: one fails in think on a provider stream that is
cut (a scripted OpenAI-compatible server), one is stopped mid-think by the
user; the page must show the steps that ran, not all five ticked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import StepDone, TurnFinished, TurnResumed, TurnStarted, TurnWaiting
from hz_tui.app import CockpitApp
from hz_tui.tail import SpineTail
from hz_tui.turn_state import TurnFollower
from hz_tui.widgets.pending import PendingPanel
from hz_tui.widgets.step_line import StepLine
from tests.support.homes import digest_contract, make_world
from tests.support.openai_stub import OpenAIStub, ToolCall
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, open_page, text_of, until

DRAFT = {"output": "digest", "text": "## Digest\n- fixed the login bug\n", "report": "drafted 1"}


def steps_of(page: object) -> str:
    return text_of(page.query_one(StepLine)).splitlines()[0]  # type: ignore[attr-defined]


async def test_a_failed_turn_shows_the_steps_that_ran_and_where_it_failed(
    tmp_path: Path, pinned_clock: None
) -> None:
    """Issue 14 item 7: a turn that failed in think shows gather ticked, think failed, and the
    rest not run."""
    world = make_world(tmp_path)
    home = Home.resolve(world.home)
    with OpenAIStub([ToolCall("draft", DRAFT, chunk_chars=48, cut_after=1)]) as stub:
        kernel = await Kernel.open(home)
        made = await kernel.new(text=digest_contract(model=stub.spec()))
        await kernel.approve(ref=made.id)
        report = await kernel.wake(ref=made.id)
        await kernel.close()
    assert report.disposition == "failed"
    client = await LocalClient.open(home)
    try:
        app = CockpitApp(home, client, live=False)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            page = await open_page(pilot, made.id)
            await until(lambda: page.turn_panel.live.status == "finished")
            await pilot.pause()
            assert steps_of(page) == "✓ gather › ✗ think › · outcome › · act › · finish"
            assert "failed" in text_of(page.query_one(StepLine))
    finally:
        await client.close()


async def test_a_stopped_turn_shows_the_steps_that_ran_and_where_it_stopped(
    tmp_path: Path, pinned_clock: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 item 7: a turn the user stopped mid-think shows think stopped, not finished."""
    world = worlds.make_world(tmp_path)
    client = LocalClient(await Kernel.open(world.home, long_lived=True))
    try:
        heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest", wake=False)
        monkeypatch.setenv("HZ_MODEL_DELAY_MS", "400")
        app = CockpitApp(world.home, client)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            page = await open_page(pilot, heinzel)
            await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
            await until(lambda: page.turn_panel.live.step == "think")
            await client.call(ops.STOP, ops.StopRequest(ref=heinzel))
            await until(lambda: page.turn_panel.live.status == "finished")
            await pilot.pause()
            assert steps_of(page) == "✓ gather › ■ think › · outcome › · act › · finish"
            assert "abandoned (stopped)" in text_of(page.query_one(StepLine))
    finally:
        await client.close()


async def test_a_proposed_heinzel_shows_its_contract_waiting_with_the_key_to_approve(
    tmp_path: Path, pinned_clock: None
) -> None:
    """Issue 14 item 7: a proposed heinzel's page says its contract waits for approval and
    which key approves it; that key approves it."""
    world = worlds.make_world(tmp_path)
    client = LocalClient(await Kernel.open(world.home, long_lived=True))
    try:
        made = await client.kernel.new(text=worlds.digest("notes-digest"))
        app = CockpitApp(world.home, client, live=False)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            page = await open_page(pilot, made.id)
            pending = " ".join(text_of(page.query_one(PendingPanel)).split())
            assert "Contract v1 waits for your approval" in pending
            assert "a approve · v read it first" in pending
            await pilot.press("a")
            await app.workers.wait_for_complete()
            page.load()
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert page.detail is not None and page.detail.heinzel.state == "asleep"
            assert "waits for your approval" not in text_of(page.query_one(PendingPanel))
    finally:
        await client.close()


async def test_a_turn_woken_from_a_wait_thinks_again_and_a_skipped_one_ticks_only_what_ran(
    home: Home,
) -> None:
    """Issue 14 item 7: the step strip follows what the kernel did — a turn woken from a wait
    runs think again (it is the step under way, not ticked), a turn skipped at the cap after
    gather shows gather and finish only."""
    kernel = await Kernel.open(home)
    try:
        heinzel = await kernel.create_heinzel("followed")
        tail = SpineTail(home.heinzel_dir(heinzel) / "session.jsonl")
        follower = TurnFollower()

        async def add(payload: object, turn: str) -> None:
            await kernel.append(heinzel, payload, turn=turn)  # type: ignore[arg-type]
            follower.apply(tail.read_new().lines)

        waited, skipped = "01JC0CKP1T0000000100000001", "01JC0CKP1T0000000100000002"
        await add(TurnStarted(cause="asked", keys=["w"], contract_version=1), waited)
        for step in ("gather", "think", "outcome"):
            await add(StepDone(step=step), waited)  # type: ignore[arg-type]
        await add(TurnWaiting(step="act"), waited)
        await add(TurnResumed(woken_by="timer", resumes=1), waited)
        assert (follower.current.done, follower.current.step) == (["gather"], "think")
        await add(TurnStarted(cause="schedule", keys=["s"], contract_version=1), skipped)
        await add(StepDone(step="gather"), skipped)
        await add(TurnFinished(disposition="skipped", reason="cap: daily"), skipped)
        live = follower.current
        assert (live.done, live.halted_at) == (["gather", "finish"], None)
    finally:
        await kernel.close()
