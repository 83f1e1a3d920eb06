"""Issue 15 item 1: the transcript and the live turn show each tool call and its result.

A changelog heinzel on the offline local model, granted ``git:read`` over a
real repository, calls ``git_log`` and ``git_show`` in a real turn; its
transcript lists each call with its arguments and the result the model got,
and the live stream (``chunk_text`` over the body, as the live panel and
``hz tail`` read it) shows one line per call and per result.
"""

from __future__ import annotations

from pathlib import Path

from hz_kernel.contracts import render_template
from hz_kernel.following import chunk_text
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import read_body
from hz_tui.transcript import TranscriptModel
from tests.support.homes import checkout_repo, make_world


async def test_the_transcript_and_the_live_stream_show_each_tool_call(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    repo = checkout_repo(world)
    params = {"name": "changes", "repo": str(repo), "document": "reports/CHANGELOG.md"}
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        made = await kernel.new(text=render_template("changelog", {**params, "model": "local"}))
        await kernel.approve(ref=made.id)
        report = await kernel.wake(ref="changes")
        answer = await kernel.turn_transcript(ref="changes", turn=report.turn)
    finally:
        await kernel.close()
    model = TranscriptModel(heinzel=made.id)
    model.take(answer)
    lines = [line.text for line in model.lines()]
    start = lines.index("Tool calls")
    assert lines[start + 1].startswith("call 1 · git_log(repo=/")
    assert lines[start + 1].endswith(", limit=5)")
    assert lines[start + 2].endswith("(429 chars)")
    assert any(line.startswith("call 4 · git_show(") for line in lines)
    assert "    Retry failed payments" in model.block_text("tool1.result").splitlines()
    stream = chunk_text(read_body(world.home / "heinzel" / made.id, report.turn) or [])
    calls = [line for line in stream.splitlines() if line.startswith("⚙ ")]
    results = [line for line in stream.splitlines() if line.startswith("  → ")]
    assert [c.split("(")[0] for c in calls] == ["⚙ git_log"] + ["⚙ git_show"] * 4
    assert len(results) == 5 and "Priya: Merge pull request" in results[0]
