"""s6 item 1: a stop that hands messages back withdraws them, on both heads, crash-safely.

The cockpit's stop (``heinzel.stop`` with ``hand_back``) ends the running
turn and, before any follow-up turn can start, withdraws the chat messages
steered into it or waiting behind it; their texts come back in the answer
and no later turn ever receives them. ``hz heinzel stop`` (no hand-back)
keeps them as the next turn's input. Real kernels, real daemons, a model
held by ``HZ_MODEL_HOLD_FILE`` so the stop lands mid-think on any machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hz_kernel import operations as ops
from hz_kernel.client import KernelClient, LocalClient
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.kernel import Kernel
from hz_kernel.store.inbox import WITHDRAWN_DIR, Inbox, InboxRequest
from tests.integration.daemon.daemon_helpers import Daemons, discovery
from tests.integration.daemon.test_daemon_turns import _heinzel, _spine
from tests.support.homes import World, make_world

WAIT_S = 60


async def _until(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"not within {WAIT_S}s: {what}"
        await asyncio.sleep(0.05)


def _turns_given(world: World, heinzel_id: str, request_id: str) -> list[str]:
    """The turns that received ``request_id``: started by it or steered with it."""
    turns = []
    for event in _spine(world, heinzel_id):
        data: Any = event["data"]
        if event["kind"] == "turn.started" and request_id in (data.get("request_ids") or []):
            turns.append(str(event["turn"]))
        if event["kind"] == "turn.steered" and data.get("request_id") == request_id:
            turns.append(str(event["turn"]))
    return turns


def _thinking(world: World, heinzel_id: str) -> bool:
    spine = _spine(world, heinzel_id)
    started = [e for e in spine if e["kind"] == "turn.started"]
    if not started:
        return False
    turn = started[-1]["turn"]
    return any(
        e["kind"] == "step.done" and e["turn"] == turn and e["data"]["step"] == "gather"  # type: ignore[index]
        for e in spine
    )


def _finished(world: World, heinzel_id: str) -> int:
    return sum(1 for e in _spine(world, heinzel_id) if e["kind"] == "turn.finished")


@contextlib.asynccontextmanager
async def _head(
    name: str, world: World, daemons: Daemons, env: dict[str, str]
) -> AsyncIterator[KernelClient]:
    home = Home.resolve(world.home)
    if name == "daemon":
        daemons.start(home, env={**env, "HZ_TICK_SECONDS": "0.3"})
        async with HttpClient(discovery(home)) as remote:
            yield remote
        return
    local = LocalClient(await Kernel.open(home, long_lived=True))
    try:
        yield local
    finally:
        await local.close()


async def _stopped_with_two_waiting(
    client: KernelClient, world: World, heinzel_id: str, hold: Path
) -> tuple[str, str, ops.api.TurnReport]:
    """A turn held mid-think, a steer and a queued message sent into it, then the cockpit's stop."""
    await client.call(ops.WAKE, ops.WakeRequest(ref=heinzel_id))
    await _until(lambda: _thinking(world, heinzel_id), "the turn thinks")
    steer = ops.ChatRequest(ref=heinzel_id, message="S3 steer", mode="steer", request_id="s-1")
    queue = ops.ChatRequest(ref=heinzel_id, message="Q after", mode="queue", request_id="q-1")
    await client.call(ops.CHAT, steer)
    await client.call(ops.CHAT, queue)
    report = await client.call(ops.STOP, ops.StopRequest(ref=heinzel_id, hand_back=True))
    hold.unlink()
    return "s-1", "q-1", report


@pytest.mark.parametrize("head", ["embedded", "daemon"])
async def test_s6_item1_a_stop_that_hands_back_withdraws_what_no_turn_answered(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch, head: str
) -> None:
    """s6 item 1: the messages come back in the answer (text, mode, id), the files are moved
    aside, no later turn receives them (a follow-up turn runs and takes only the next message),
    the conversation no longer lists them and their ids are not admitted again (HZS098)."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    hold = tmp_path / "hold"
    hold.touch()
    env = {"HZ_MODEL_HOLD_FILE": str(hold)}
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    async with _head(head, world, daemons, env) as client:
        steer, queue, report = await _stopped_with_two_waiting(client, world, heinzel_id, hold)
        assert report.status == "finished" and report.disposition == "abandoned"
        given = [(i.message, i.mode, i.request_id) for i in report.handed_back]
        assert given == [("S3 steer", "steer", steer), ("Q after", "queue", queue)]
        inbox = world.home / "heinzel" / heinzel_id / "inbox"
        assert sorted(p.name for p in (inbox / "withdrawn").iterdir()) == [
            f"{queue}.json",
            f"{steer}.json",
        ]
        assert not (inbox / f"{steer}.json").exists() and not (inbox / f"{queue}.json").exists()
        stopped = report.turn

        done = _finished(world, heinzel_id)
        nxt = ops.ChatRequest(ref=heinzel_id, message="next one", request_id="n-1")
        await client.call(ops.CHAT, nxt)
        await _until(lambda: _finished(world, heinzel_id) > done, "the next turn ends")
        assert _turns_given(world, heinzel_id, "n-1"), "the next message started a turn"
        assert set(_turns_given(world, heinzel_id, steer)) <= {stopped}
        assert _turns_given(world, heinzel_id, queue) == []
        talk = await client.call(ops.CONVERSATION, ops.HeinzelRef(ref=heinzel_id))
        assert [m.message for m in talk.items] == ["next one"]

        again = ops.ChatRequest(ref=heinzel_id, message="S3 steer", request_id=steer)
        with pytest.raises(HzError) as refused:
            await client.call(ops.CHAT, again)
        assert "HZS098" in refused.value.one_line()


async def test_s6_item1_a_plain_stop_keeps_the_queue_as_the_next_turns_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """s6 item 1: without ``hand_back`` (``hz heinzel stop``) nothing is withdrawn: the queued
    message stays and a turn takes it, as docs/daemon.md promised before."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    hold = tmp_path / "hold"
    hold.touch()
    monkeypatch.setenv("HZ_MODEL_HOLD_FILE", str(hold))
    local = LocalClient(await Kernel.open(Home.resolve(world.home), long_lived=True))
    try:
        await local.call(ops.WAKE, ops.WakeRequest(ref=heinzel_id))
        await _until(lambda: _thinking(world, heinzel_id), "the turn thinks")
        queue = ops.ChatRequest(ref=heinzel_id, message="Q after", request_id="q-1")
        await local.call(ops.CHAT, queue)
        report = await local.call(ops.STOP, ops.StopRequest(ref=heinzel_id))
        hold.unlink()
        assert report.handed_back == []
        done = _finished(world, heinzel_id)
        await local.call(ops.WAKE, ops.WakeRequest(ref=heinzel_id))
        await _until(lambda: _finished(world, heinzel_id) > done, "a turn ends")
        assert len(_turns_given(world, heinzel_id, "q-1")) == 1
    finally:
        await local.close()


async def test_s6_item1_a_crash_mid_withdrawal_never_delivers_the_withdrawn_one(
    tmp_path: Path, daemons: Daemons
) -> None:
    """s6 item 1 (crash safety): a daemon killed right after the first message is moved aside
    (``HZ_CRASH_AT=inbox:withdrawn``) never delivers that one; the one it did not withdraw is
    delivered by the next daemon, once."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    hold = tmp_path / "hold"
    hold.touch()
    env = {"HZ_MODEL_HOLD_FILE": str(hold), "HZ_CRASH_AT": "inbox:withdrawn"}
    async with _head("daemon", world, daemons, env) as client:
        with pytest.raises(HzError):
            await _stopped_with_two_waiting(client, world, heinzel_id, hold)
    inbox = world.home / "heinzel" / heinzel_id / "inbox"
    assert [p.name for p in (inbox / "withdrawn").iterdir()] == ["s-1.json"]
    if hold.exists():
        hold.unlink()
    async with _head("daemon", world, daemons, {}) as client:
        await _until(lambda: _turns_given(world, heinzel_id, "q-1"), "the queued one delivered")
        done = _finished(world, heinzel_id)
        nxt = ops.ChatRequest(ref=heinzel_id, message="next one", request_id="n-1")
        await client.call(ops.CHAT, nxt)
        await _until(lambda: _turns_given(world, heinzel_id, "n-1"), "the next one delivered")
        await _until(lambda: _finished(world, heinzel_id) > done, "a turn ends")
    stopped = {
        str(e["turn"])
        for e in _spine(world, heinzel_id)
        if e["kind"] == "turn.finished" and e["data"].get("reason") == "stopped"  # type: ignore[union-attr]
    }
    assert set(_turns_given(world, heinzel_id, "s-1")) <= stopped
    assert len(_turns_given(world, heinzel_id, "q-1")) == 1


async def test_s6_item1_a_stopped_resumed_turn_runs_no_wake_waiting_behind_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """s6 item 1: a turn cut off by a crash is resumed by the next message's wake; stopped
    with hand-back, neither that message nor a steer runs afterwards: both come back."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    cut = world.hz("heinzel", "wake", heinzel_id, check=False, HZ_CRASH_AT="step.done:gather")
    assert cut.returncode != 0 and "turn.started" in [e["kind"] for e in _spine(world, heinzel_id)]
    hold = tmp_path / "hold"
    hold.touch()
    monkeypatch.setenv("HZ_MODEL_HOLD_FILE", str(hold))
    local = LocalClient(await Kernel.open(Home.resolve(world.home), long_lived=True))
    try:
        first = ops.ChatRequest(ref=heinzel_id, message="after the crash", request_id="a-1")
        await local.call(ops.CHAT, first)
        await _until(
            lambda: any(e["kind"] == "turn.resumed" for e in _spine(world, heinzel_id)),
            "the cut turn resumes",
        )
        steer = ops.ChatRequest(ref=heinzel_id, message="S3 steer", mode="steer", request_id="s-1")
        await local.call(ops.CHAT, steer)
        stop = ops.StopRequest(ref=heinzel_id, hand_back=True)
        # Guarded: were the waiting wake run before the stop answers, it would hold forever.
        report = await asyncio.wait_for(local.call(ops.STOP, stop), WAIT_S)
        hold.unlink()
        assert [i.request_id for i in report.handed_back] == ["a-1", "s-1"]
        done = _finished(world, heinzel_id)
        nxt = ops.ChatRequest(ref=heinzel_id, message="next one", request_id="n-1")
        await local.call(ops.CHAT, nxt)
        await _until(lambda: _finished(world, heinzel_id) > done, "the next turn ends")
        assert _turns_given(world, heinzel_id, "a-1") == []
        assert set(_turns_given(world, heinzel_id, "s-1")) <= {report.turn}
    finally:
        await local.close()


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_s6_item1_a_withdrawn_folder_that_is_no_folder_is_refused_and_moves_nothing(
    tmp_path: Path, kind: str
) -> None:
    """s6 item 1 (hostile files): ``inbox/withdrawn`` as a symbolic link (to a folder outside
    the home) or a file is refused (HZS090); the request stays in the inbox, nothing moves."""
    inbox = Inbox(tmp_path / "hz-x")
    request, _ = inbox.admit(InboxRequest(request_id="r-1", heinzel="hz-x", message="hi"))
    outside = tmp_path / "outside"
    outside.mkdir()
    aside = inbox.dir / WITHDRAWN_DIR
    if kind == "symlink":
        aside.symlink_to(outside)
    else:
        aside.write_text("not a folder")
    with pytest.raises(HzError) as refused:
        inbox.withdraw([request])
    assert refused.value.code == "HZS090"
    assert (inbox.dir / "r-1.json").exists() and list(outside.iterdir()) == []
