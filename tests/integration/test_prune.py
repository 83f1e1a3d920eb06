"""Issue 12 item 9, prune never hurts: it keeps every body something still needs, and runs itself.

Bodies expire after ``retention_days`` (90 by default), but the body of a
pending draft (its approval learns from the text as placed), of an open
question, and of each output's last approved draft and its approval are
kept whatever their age. The source cache is pruned with the rest, and a
tick loop prunes on its own once a day.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import time_machine
from ulid import ULID

from hz_kernel.commands.tick import run_tick_loop
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.pruning import PRUNE_EVERY, DailyPrune
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import (
    ApprovalObserved,
    ContractApproved,
    DraftPlaced,
    HeinzelCreated,
    QuestionAsked,
    TurnFinished,
    TurnStarted,
)
from tests.support.drafted import HZ, Drafted, build_drafted, coded_only, copy_drafted

#: Half a year after the draft: far past the default retention of 90 days.
LATER = "2027-06-01T09:00:00Z"


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Drafted:
    return build_drafted(tmp_path_factory.mktemp("drafted"))


@pytest.fixture
def world(original: Drafted, tmp_path: Path) -> Drafted:
    return copy_drafted(original, tmp_path / "world")


def _body(world: Drafted, turn: str) -> Path:
    return world.heinzel_dir / "turns" / f"{turn}.jsonl"


def test_prune_with_a_pending_draft_then_approve_still_learns_from_the_edit(
    world: Drafted,
) -> None:
    """Issue 12 item 9: prune keeps a pending draft's body, so its approval learns from the edit."""
    draft_turn = world.draft_turn()
    pruned = world.hz("heinzel", "prune", "--json", now=LATER)
    coded_only(pruned)
    report = json.loads(pruned.stdout)
    assert _body(world, draft_turn).is_file()
    assert report["requests_removed"] == 1 and report["sources_removed"] == 1
    assert not list((world.home / "heinzel" / "sources").glob("*.json"))

    text = world.document.read_text()
    edited = re.sub(r"> 🧝 DRAFT.*\n", "", text)
    edited = re.sub(r"\d+ items \(.*\n", "", edited)
    assert edited != text
    world.document.write_text(edited)
    ticked = world.hz("tick", "--once", now="2027-06-01T10:00:00Z")
    coded_only(ticked)
    lessons = world.hz("heinzel", "lessons", "dig", "--json", now="2027-06-01T10:00:00Z")
    assert lessons.returncode == 0, lessons.stderr
    assert json.loads(lessons.stdout), "the approval learned nothing from the edit"


def _turn(writer: SpineWriter, *, key: str | None = None) -> str:
    turn = str(ULID())
    keys = [key] if key else []
    writer.append(
        TurnStarted(cause="asked", keys=keys, contract_version=1),
        turn=turn,
        key=key,
    )
    return turn


def _finish(writer: SpineWriter, turn: str) -> None:
    writer.append(TurnFinished(disposition="drafted"), turn=turn)


def test_prune_keeps_an_open_question_and_the_last_approved_output(tmp_path: Path) -> None:
    """Issue 12 item 9: bodies a question or the last approved output needs outlive retention."""
    home = tmp_path / "home"
    heinzel_id = f"hz-{ULID()}"
    heinzel_dir = home / "heinzel" / heinzel_id
    asset = "doc:reports/digest.md#digest"
    with SpineWriter.open(heinzel_dir) as writer:
        writer.append(HeinzelCreated(name="dig"))
        writer.append(ContractApproved(version=1, fingerprint="f" * 64))
        bodies: dict[str, str] = {}
        for name in ("older draft", "last draft"):
            turn = bodies[name] = _turn(writer)
            key = f"{heinzel_id}@v1@{turn}@{asset}"
            writer.append(
                DraftPlaced(key=key, asset=asset, hash="a" * 64, size=10, contract_version=1),
                turn=turn,
            )
            _finish(writer, turn)
            approval = bodies[f"{name} approval"] = _turn(
                writer, key=f"{heinzel_id}@approval:{key}"
            )
            writer.append(
                ApprovalObserved(key=key, share_changed=0.5, output_fp="b" * 64), turn=approval
            )
            _finish(writer, approval)
        asked = bodies["question"] = _turn(writer)
        writer.append(QuestionAsked(key=f"{heinzel_id}@q:1", question="Which week?"), turn=asked)
        _finish(writer, asked)
        bodies["plain"] = _turn(writer)
        _finish(writer, bodies["plain"])
    for turn in bodies.values():
        (heinzel_dir / "turns").mkdir(mode=0o700, exist_ok=True)
        (heinzel_dir / "turns" / f"{turn}.jsonl").write_text('{"type":"input"}\n')

    result = subprocess.run(
        [*HZ, "heinzel", "prune", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HZ_HOME": str(home), "HZ_NOW": "2099-01-01T00:00:00Z"},
    )
    coded_only(result)
    turns = heinzel_dir / "turns"
    kept = {name for name, turn in bodies.items() if (turns / f"{turn}.jsonl").exists()}
    assert kept == {"last draft", "last draft approval", "question"}
    assert json.loads(result.stdout)["bodies_removed"] == 3


def _a_delivered_request(world: Drafted) -> Path:
    """A delivered request's file: turns move them into ``inbox/delivered/``."""
    inbox = world.heinzel_dir / "inbox"
    return next(iter([*inbox.glob("delivered/*.json"), *inbox.glob("*.json")]))


def test_a_tick_loop_prunes_on_its_own(world: Drafted) -> None:
    """Issue 12 item 9: ``hz tick`` in a loop prunes expired files without being asked."""
    request = _a_delivered_request(world)
    looping = subprocess.Popen(
        [*HZ, "tick", "--interval", "0.5"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=world.hz_env(LATER),
    )
    try:
        deadline = time.monotonic() + 90
        while request.exists() and time.monotonic() < deadline and looping.poll() is None:
            time.sleep(0.2)
        assert not request.exists(), "the loop never pruned the delivered request"
        assert _body(world, world.draft_turn()).is_file()
    finally:
        looping.terminate()
        looping.wait(timeout=30)


async def test_the_loops_prune_runs_once_a_day(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 12 item 9: a loop prunes at its first tick, then again only after a day."""
    monkeypatch.delenv("HZ_NOW", raising=False)
    calls: list[int] = []

    async def prune() -> None:
        calls.append(1)

    daily = DailyPrune(prune)
    with time_machine.travel("2026-12-01T09:00:00Z", tick=False) as clock:
        for _ in range(3):
            assert await daily() is None
        assert len(calls) == 1
        clock.shift(PRUNE_EVERY)
        await daily()
        await daily()
    assert len(calls) == 2


async def test_the_daemons_tick_loop_prunes_on_its_own(
    world: Drafted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12 item 9: the loop the daemon and the cockpit run prunes without being asked."""
    monkeypatch.setenv("HZ_HOME", str(world.home))
    monkeypatch.setenv("HZ_NOW", LATER)
    request = _a_delivered_request(world)
    kernel = await Kernel.open(Home.resolve(world.home), long_lived=True)
    stop = asyncio.Event()
    loop = asyncio.create_task(run_tick_loop(kernel, 0.05, stop))
    try:
        for _ in range(600):
            if not request.exists():
                break
            await asyncio.sleep(0.1)
        assert not request.exists(), "the loop never pruned the delivered request"
        assert _body(world, world.draft_turn()).is_file()
    finally:
        stop.set()
        await loop
        await kernel.close()


def test_prune_never_reaches_through_a_delivered_folder_that_links_elsewhere(
    world: Drafted,
) -> None:
    """Issue 16 attack: ``inbox/delivered`` a link to another folder; prune removes the
    request's own file and never a file of the same name over there (nor counts it)."""
    request = _a_delivered_request(world)
    inbox = world.heinzel_dir / "inbox"
    os.replace(request, inbox / request.name)
    if (inbox / "delivered").is_dir():
        (inbox / "delivered").rmdir()
    elsewhere = world.root / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / request.name).write_bytes((inbox / request.name).read_bytes())
    (inbox / "delivered").symlink_to(elsewhere)
    pruned = world.hz("heinzel", "prune", "--json", now=LATER)
    coded_only(pruned)
    assert json.loads(pruned.stdout)["requests_removed"] == 1
    assert not (inbox / request.name).exists()
    assert (elsewhere / request.name).is_file()
