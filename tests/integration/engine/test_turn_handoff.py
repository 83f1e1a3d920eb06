"""Issue 18 item 4: a turn hands a task to a coding agent runner as one journalled effect.

A scripted model (the OpenAI-compatible wire stub) calls ``handoff``; the
runner is a real process (``tests/support/handoff_runner.py``) that appends
a line to a file each time it starts. The report comes back as the tool
result, the transcript goes into the turn body and the spine holds hashes
and cost only. A real ``hz`` killed while the runner runs is resumed: the
call is settled interrupted and the runner never starts again. A stop
mid-handoff kills the runner.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hz_kernel import operations as ops
from hz_kernel.adapters.sources import sha256_hex
from hz_kernel.client import LocalClient
from hz_kernel.config import load_settings
from hz_kernel.connect import drain
from hz_kernel.engine.tools import handoff
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import read_body
from tests.support import handoff_runner
from tests.support.handoff import (
    DRAFT,
    HANDOFF,
    TASK,
    configure,
    gone,
    handoff_contract,
    marked,
)
from tests.support.homes import HZ, World, make_world
from tests.support.openai_stub import OpenAIStub, ToolCall


async def _make(world: World, text: str) -> str:
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        made = await kernel.new(text=text)
        await kernel.approve(ref=made.id)
        return made.id
    finally:
        await kernel.close()


async def _wake(world: World, request_id: str | None = None) -> Any:
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        return await kernel.wake(ref="fixer", request_id=request_id)
    finally:
        await kernel.close()


def _seen_by_model(stub: OpenAIStub) -> list[dict[str, Any]]:
    last = stub.requests[-1]["messages"]
    return [json.loads(m["content"]) for m in last if m["role"] == "tool"]


def _events(world: World, heinzel: str, *kinds: str) -> list[dict[str, Any]]:
    """The payloads of ``kinds``; of the effect ledger, the handoff's lines only."""
    return [
        e["data"]  # type: ignore[misc]
        for e in world.spine(heinzel)
        if e["kind"] in kinds and "@handoff:" in str(e["data"].get("key", "@handoff:"))  # type: ignore[attr-defined]
    ]


async def test_a_turn_hands_off_and_goes_on_with_the_report(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    marks = configure(world.home, "report")
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        report = await _wake(world)
    assert report.disposition == "drafted"
    assert len(marked(marks)["started"]) == 1
    (seen,) = _seen_by_model(stub)
    # The report is what the runner printed, its cost line taken off.
    shown = seen["result"]
    assert shown.endswith(handoff_runner.REPORT) and handoff_runner.COST not in shown
    (started,) = _events(world, heinzel, "effect.started")
    assert started["effect"] == "handoff" and started["target"] == "script"
    (done,) = _events(world, heinzel, "effect.done")
    (finished,) = _events(world, heinzel, "handoff.finished")
    assert done["key"] == started["key"] == finished["key"]
    assert finished["exit_status"] == 0 and not finished["timed_out"]
    assert finished["priced"] is True and finished["transcript_cut"] == 0
    (usage,) = _events(world, heinzel, "usage")
    assert usage == {"purpose": "handoff", "tokens": 1200, "tokens_cached": 0, "usd": 0.25}
    records = read_body(world.home / "heinzel" / heinzel, report.turn) or []
    transcript = "".join(r["text"] for r in records if r["type"] == "handoff_output")
    assert handoff_runner.WORK_LINE in transcript and handoff_runner.COST in transcript
    assert finished["transcript_hash"] == done["hash"] == sha256_hex(transcript)
    assert finished["transcript_size"] == len(transcript.encode())
    assert finished["report_hash"] == sha256_hex(shown)
    (ended,) = [r for r in records if r["type"] == "handoff"]
    assert ended["exit_status"] == 0 and ended["report"] == shown
    spine = (world.home / "heinzel" / heinzel / "session.jsonl").read_text()
    for text in (handoff_runner.WORK_LINE, handoff_runner.REPORT, "Rename the heading"):
        assert text not in spine
    listed = world.hz("heinzel", "actions", "fixer", "--json")
    assert listed.returncode == 0, listed.stderr
    (handed,) = [e for e in json.loads(listed.stdout)["items"] if e["what"] == "handed_off"]
    assert handed | {"seq": 0, "at": ""} == {
        "seq": 0,
        "at": "",
        "turn": report.turn,
        "what": "handed_off",
        "by": "hz",
        "name": "script",
        "ref": None,
        "fingerprint": finished["report_hash"],
        "line": None,
        "transcript_hash": finished["transcript_hash"],
        "exit_status": 0,
        "usd": 0.25,
        "tokens": 1200,
        "interrupted": False,
    }
    assert (
        "handed off to script (exit 0, 0.2500 USD)"
        in world.hz("heinzel", "actions", "fixer").stdout
    )


@pytest.mark.parametrize(
    ("mode", "args", "report", "cost"),
    [
        ("claude", (), "claude-json", {"tokens": 1500, "tokens_cached": 300, "usd": 0.31}),
        ("codex", ("{report_file}", "{task}"), "file", None),
    ],
)
async def test_claude_code_and_codex_reports_are_read_where_they_put_them(
    tmp_path: Path, mode: str, args: tuple[str, ...], report: str, cost: dict[str, Any] | None
) -> None:
    world = make_world(tmp_path)
    configure(world.home, mode, *args, report=report)
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        await _wake(world)
    (seen,) = _seen_by_model(stub)
    assert seen["result"] == handoff_runner.REPORT
    usage = [{k: d[k] for k in ("tokens", "tokens_cached", "usd")}
             for d in _events(world, heinzel, "usage")]  # fmt: skip
    assert usage == ([cost] if cost else [])
    (finished,) = _events(world, heinzel, "handoff.finished")
    assert finished["priced"] is (cost is not None)


async def test_a_bad_runner_name_and_a_failing_runner_are_results_the_model_reads(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    marks = configure(world.home, "fail")
    calls = [
        ToolCall("handoff", {"task": TASK, "workdir": "notes", "runner": "nope"}),
        ToolCall("handoff", {"task": TASK, "workdir": str(tmp_path)}),
        HANDOFF,
    ]
    with OpenAIStub([*calls, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        report = await _wake(world)
    assert report.disposition == "drafted"
    seen = _seen_by_model(stub)
    assert [s["error"] for s in seen] == ["HZE071", "HZE062", "HZE073"]
    assert "configured: script" in seen[0]["message"]
    assert "status 3: cannot write to the repository" in seen[2]["message"]
    assert len(marked(marks)["started"]) == 1, "refused calls never start the runner"
    assert len(_events(world, heinzel, "effect.started")) == 1
    (finished,) = _events(world, heinzel, "handoff.finished")
    assert finished["exit_status"] == 3 and finished["priced"] is False
    assert not _events(world, heinzel, "usage")


async def test_hz_failing_after_the_runner_ran_settles_the_effect_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure of hz's own between the runner's end and ``effect.done`` (a body it cannot
    write, say) leaves no effect open: it may or may not have happened."""

    def broken(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(handoff, "report_of", broken)
    world = make_world(tmp_path)
    marks = configure(world.home, "report")
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        report = await _wake(world)
    assert report.disposition == "drafted"
    (seen,) = _seen_by_model(stub)
    assert seen["error"] == "HZE063"
    assert [d["effect"] for d in _events(world, heinzel, "effect.interrupted")] == ["handoff"]
    assert not _events(world, heinzel, "effect.done", "handoff.finished")
    assert len(marked(marks)["started"]) == 1


async def test_a_runner_over_its_time_is_ended_and_the_model_told(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    marks = configure(world.home, "hang", timeout_s=1)
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        report = await _wake(world)
    assert report.disposition == "drafted"
    (seen,) = _seen_by_model(stub)
    assert seen["error"] == "HZE074" and "over its 1 s" in seen["message"]
    (finished,) = _events(world, heinzel, "handoff.finished")
    assert finished["timed_out"] is True and finished["exit_status"] == -signal.SIGTERM
    pids = marked(marks, lines=2)
    assert all(gone(pid, timeout_s=0.5) for pid in pids["started"] + pids["child"])


async def test_a_runner_that_leaves_a_child_holding_its_output_is_done_when_it_exits(
    tmp_path: Path,
) -> None:
    """Attack pass: a runner that started a background process (a dev server) and exited 0
    was reported as over its time, the turn blocked for the whole timeout."""
    world = make_world(tmp_path)
    marks = configure(world.home, "forks", timeout_s=60)
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        report = await _wake(world)
    assert report.disposition == "drafted"
    (seen,) = _seen_by_model(stub)
    assert seen.get("error") is None and handoff_runner.REPORT in str(seen)
    (finished,) = _events(world, heinzel, "handoff.finished")
    assert finished["timed_out"] is False and finished["exit_status"] == 0
    assert finished["duration_ms"] < 30_000
    assert marked(marks, lines=1)["started"]


async def test_a_runner_that_writes_more_than_its_bound_keeps_its_head_and_tail(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    configure(world.home, "flood", max_output_bytes=8192)
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        report = await _wake(world)
    (seen,) = _seen_by_model(stub)
    assert seen["result"].endswith(handoff_runner.REPORT)
    (finished,) = _events(world, heinzel, "handoff.finished")
    records = read_body(world.home / "heinzel" / heinzel, report.turn) or []
    streamed = "".join(r["text"] for r in records if r["type"] == "handoff_output")
    (ended,) = [r for r in records if r["type"] == "handoff"]
    assert len(streamed.encode()) == len(ended["tail"].encode()) == 4096
    assert streamed.startswith(handoff_runner.WORK_LINE)
    assert ended["tail"].endswith(handoff_runner.REPORT + "\n")
    lines = handoff_runner.FLOOD_LINES * len("line 00000 of the flood\n")
    total = lines + len(handoff_runner.WORK_LINE + handoff_runner.REPORT) + 2
    assert finished["transcript_size"] == total
    assert finished["transcript_cut"] == total - 8192
    marker = f"[hz: {total - 8192} bytes of output left out here]"
    assert marker in seen["result"]
    assert finished["transcript_hash"] == sha256_hex(f"{streamed}\n{marker}\n{ended['tail']}")


async def test_a_handoff_cut_by_a_kill_is_interrupted_on_resume_and_never_run_again(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    marks = configure(world.home, "hang")
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        hz = subprocess.Popen(
            [*HZ, "heinzel", "wake", "fixer", "--request-id", "r1"],
            env=world.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            pids = marked(marks, lines=2)
        finally:
            hz.send_signal(signal.SIGKILL)
            hz.wait(timeout=30)
        (pid,), (child,) = pids["started"], pids["child"]
        assert gone(pid) and gone(child), "the runner ends once the hz that started it is gone"
        assert world.kinds(heinzel)[-2:] == ["tool.started", "effect.started"]
        report = await _wake(world, request_id="r1")
    assert report.disposition == "drafted"
    assert len(marked(marks)["started"]) == 1, "the runner never starts again"
    tools = [(e["kind"], e["data"].get("tool")) for e in world.spine(heinzel)
             if str(e["kind"]).startswith(("tool.", "effect.", "handoff."))]  # fmt: skip
    assert tools == [
        ("tool.started", "handoff"),
        ("effect.started", None),
        ("effect.interrupted", None),
        ("tool.interrupted", "handoff"),
        ("effect.started", None),
        ("effect.done", None),
    ]
    (seen,) = _seen_by_model(stub)
    assert seen["error"] == "HZE069"


async def test_a_kill_after_the_runner_ended_answers_from_its_record_never_running_it_again(
    tmp_path: Path,
) -> None:
    """Killed after ``effect.done`` but before the call's result was recorded: the resume
    answers the model with the report the body keeps, and the runner does not start again."""
    world = make_world(tmp_path)
    marks = configure(world.home, "report")
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        crashed = world.hz("heinzel", "wake", "fixer", "--request-id", "r1", check=False,
                           HZ_CRASH_AT="tool:before-result")  # fmt: skip
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        assert "tool.finished" not in world.kinds(heinzel)
        report = await _wake(world, request_id="r1")
    assert report.disposition == "drafted"
    assert len(marked(marks)["started"]) == 1
    (seen,) = _seen_by_model(stub)
    assert seen["result"].endswith(handoff_runner.REPORT)
    (finished,) = [e["data"] for e in world.spine(heinzel) if e["kind"] == "tool.finished"]
    assert finished["found_on_resume"] is True and finished.get("error") is None
    kinds = world.kinds(heinzel)
    assert "tool.interrupted" not in kinds and "effect.interrupted" not in kinds


@pytest.mark.parametrize("point", ["effect.done", "handoff.finished"])
async def test_a_kill_before_the_handoff_s_cost_is_recorded_records_it_on_resume_once(
    tmp_path: Path, point: str
) -> None:
    """Killed after ``effect.done`` (or ``handoff.finished``) but before the runner's cost is in
    the spine: the resume records ``handoff.finished`` and ``usage`` from the body's record,
    each once, so the spend caps count what the runner cost; the runner does not run again."""
    world = make_world(tmp_path)
    marks = configure(world.home, "report")
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        crashed = world.hz("heinzel", "wake", "fixer", "--request-id", "r1", check=False,
                           HZ_CRASH_AT=point)  # fmt: skip
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        assert "usage" not in world.kinds(heinzel)
        report = await _wake(world, request_id="r1")
    assert report.disposition == "drafted"
    assert len(marked(marks)["started"]) == 1
    (seen,) = _seen_by_model(stub)
    assert seen["result"].endswith(handoff_runner.REPORT)
    (done,) = _events(world, heinzel, "effect.done")
    (finished,) = _events(world, heinzel, "handoff.finished")
    assert finished["key"] == done["key"] and finished["transcript_hash"] == done["hash"]
    assert finished["exit_status"] == 0 and finished["priced"] is True
    (usage,) = _events(world, heinzel, "usage")
    assert usage == {"purpose": "handoff", "tokens": 1200, "tokens_cached": 0, "usd": 0.25}
    kinds = world.kinds(heinzel)
    assert kinds.index("handoff.finished") < kinds.index("usage") < kinds.index("tool.finished")


async def test_stopping_the_turn_mid_handoff_kills_the_runner(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    marks = configure(world.home, "hang")
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        kernel = await Kernel.open(Home.resolve(world.home))
        try:
            turn = asyncio.create_task(kernel.wake(ref="fixer"))
            while len(marks.read_text().splitlines()) < 2:
                await asyncio.sleep(0.05)
            pids = marked(marks, lines=2)
            stopped = await kernel.stop(ref="fixer")
            await turn
        finally:
            await kernel.close()
    (pid,), (child,) = pids["started"], pids["child"]
    assert gone(pid, timeout_s=0.5) and gone(child, timeout_s=0.5), "the stop ended its group"
    assert stopped.disposition == "abandoned"
    kinds = world.kinds(heinzel)
    assert "handoff.finished" not in kinds
    (interrupted,) = _events(world, heinzel, "effect.interrupted")
    assert interrupted["effect"] == "handoff"
    (finished,) = _events(world, heinzel, "turn.finished")
    assert finished["reason"] == "stopped"
    listed = world.hz("heinzel", "actions", "fixer", "--json")
    (handed,) = [e for e in json.loads(listed.stdout)["items"] if e["what"] == "handed_off"]
    assert (handed["name"], handed["interrupted"], handed["exit_status"]) == ("script", True, None)
    (seq,) = [e["seq"] for e in world.spine(heinzel) if e["kind"] == "effect.interrupted"]
    assert handed["seq"] == seq
    shown = world.hz("heinzel", "actions", "fixer").stdout
    assert shown.splitlines()[-1].endswith("  handed off to script (interrupted)"), shown


@pytest.mark.parametrize(
    ("table", "wanted"),
    [
        ("[handoff.runners.x]\ncommand = []\n", "handoff.runners.x.command"),
        ('[handoff.runners.x]\ncommand = ["a", "{report_file}"]\n', '"file" and a {report_file}'),
        ('[handoff]\ndefault = "y"\n[handoff.runners.x]\ncommand = ["a"]\n', "names no runner"),
        ('[handoff.runners."Bad Name"]\ncommand = ["a"]\n', "handoff.runners"),
        ('[handoff.runners.x]\ncommand = ["a"]\ntimeout_s = 0\n', "timeout_s"),
    ],
)
def test_a_bad_runner_setting_is_one_coded_line(tmp_path: Path, table: str, wanted: str) -> None:
    path = tmp_path / "hz.toml"
    path.write_text(table)
    with pytest.raises(HzError) as raised:
        load_settings(path)
    line = raised.value.one_line()
    assert raised.value.code == "HZS062" and wanted in line and "\n" not in line


async def test_a_drain_mid_handoff_ends_the_runner_and_the_next_kernel_settles_it(
    tmp_path: Path,
) -> None:
    """The cockpit hands its turns to the daemon (drain, close): the runner's group is ended,
    the turn is left open, and the next kernel resumes it with the call interrupted."""
    world = make_world(tmp_path)
    marks = configure(world.home, "hang")
    with OpenAIStub([HANDOFF, ToolCall("draft", DRAFT)]) as stub:
        heinzel = await _make(world, handoff_contract(stub.spec()))
        client = LocalClient(await Kernel.open(Home.resolve(world.home), long_lived=True))
        try:
            await client.call(ops.WAKE, ops.WakeRequest(ref="fixer"))
            while len(marks.read_text().splitlines()) < 2:
                await asyncio.sleep(0.05)
            pids = marked(marks, lines=2)
            drain(client)
        finally:
            await client.close()
        (pid,), (child,) = pids["started"], pids["child"]
        assert gone(pid, timeout_s=0.5) and gone(child, timeout_s=0.5), "closing ended its group"
        assert world.kinds(heinzel)[-2:] == ["effect.started", "attempt.failed"]
        kernel = await Kernel.open(Home.resolve(world.home))
        try:
            await kernel.resume(ref="fixer")
        finally:
            await kernel.close()
    assert len(marked(marks)["started"]) == 1
    assert [d["effect"] for d in _events(world, heinzel, "effect.interrupted")] == ["handoff"]
    (finished,) = _events(world, heinzel, "turn.finished")
    assert finished["disposition"] == "drafted"
