"""Issue 18 item 2: the action log — hz's own entries, the model's ``report`` tool, the user's
``hz heinzel report``, and the spine's lint over all of them.

A scripted model (the OpenAI-compatible wire stub) calls ``report`` in a real
turn; the user reports from the real command line; ``hz heinzel actions``
then lists what the turn read (inputs by name, ref and fingerprint), what it
wrote (the draft's asset and hash) and both reported lines. A line with an
e-mail address is refused by the same lint as every spine line, for the
model (a coded tool result, the turn goes on) and for the user (exit 1).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hz_kernel import operations as ops
from hz_kernel.held import deliver_queued, queue
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import read_body
from hz_kernel.store.inbox import Inbox
from tests.support.env import hz_env
from tests.support.homes import digest_contract, make_world
from tests.support.openai_stub import OpenAIStub, ToolCall

HZ = [sys.executable, "-m", "hz_kernel.cli"]
NOW = "2026-10-30T15:00:00Z"
DRAFT = {"output": "digest", "text": "- fixed the login bug\n", "report": "drafted 1"}


def _hz(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HZ, *args], capture_output=True, text=True, env=hz_env(home, HZ_NOW=NOW), timeout=120
    )


async def test_the_action_log_holds_reads_writes_and_both_reports(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    (world.notes / "monday.md").write_text("# Monday\n- fixed the login bug\n")
    calls = [
        ToolCall("report", {"line": "read the notes; one fix worth a line"}),
        ToolCall("report", {"line": "ask priya@example.com about it"}),
    ]
    with OpenAIStub([*calls, ToolCall("draft", DRAFT)]) as stub:
        kernel = await Kernel.open(Home.resolve(world.home))
        try:
            made = await kernel.new(text=digest_contract(model=stub.spec()))
            await kernel.approve(ref=made.id)
            report = await kernel.wake(ref=made.id)
        finally:
            await kernel.close()
    assert report.disposition == "drafted"
    results = [
        r
        for r in read_body(world.home / "heinzel" / made.id, report.turn) or []
        if r["type"] == "tool_result"
    ]
    assert [r.get("error") for r in results] == [None, "HZS052"]

    said = _hz(world.home, "heinzel", "report", "notes-digest", "checked the draft by hand")
    assert said.returncode == 0, said.stderr
    refused = _hz(world.home, "heinzel", "report", "notes-digest", "mail theo@example.com")
    assert refused.returncode == 1 and refused.stderr.startswith("HZS052: ")
    two_lines = _hz(world.home, "heinzel", "report", "notes-digest", "one\ntwo")
    assert two_lines.returncode == 2 and two_lines.stderr.startswith("HZU101: line: ")
    none = _hz(world.home, "heinzel", "actions", "notes-digest", "-n", "0")
    assert none.returncode == 2 and none.stderr.startswith("HZU101: -n: "), none.stderr
    for odd, said_why in (
        ("   ", "must say something"),
        ("one\u2028two", "U+2028, line separator"),
        ("abc\u202edef", "U+202E, right-to-left override"),
        ("zero\u200bwidth", "U+200B, zero width space"),
    ):
        refused = _hz(world.home, "heinzel", "report", "notes-digest", odd)
        assert refused.returncode == 2 and said_why in refused.stderr, (odd, refused.stderr)

    listed = _hz(world.home, "heinzel", "actions", "notes-digest", "--json")
    assert listed.returncode == 0, listed.stderr
    log = json.loads(listed.stdout)
    assert (log["heinzel"], log["name"]) == (made.id, "notes-digest")
    entries = log["items"]
    summary = [(e["what"], e["by"], e["name"] or e["ref"] or e["line"]) for e in entries]
    assert summary == [
        ("read", "hz", "notes"),
        ("reported", "model", "read the notes; one fix worth a line"),
        ("wrote", "hz", "doc:reports/digest.md#digest"),
        ("reported", "user", "checked the draft by hand"),
    ]
    read = entries[0]
    assert read["ref"] == "files:notes/**/*.md" and len(read["fingerprint"]) == 64
    assert read["turn"] == report.turn and entries[2]["turn"] == report.turn
    assert entries[3]["turn"] is None
    spine = (world.home / "heinzel" / made.id / "session.jsonl").read_text()
    assert "example.com" not in spine

    text = _hz(world.home, "heinzel", "actions", "notes-digest").stdout
    assert "reported by model: read the notes; one fix worth a line" in text
    assert "read  notes (files:notes/**/*.md)" in text


def test_a_report_on_a_broken_spine_is_refused_like_a_wake(tmp_path: Path) -> None:
    """Attack pass: ``hz heinzel report`` appended to a spine whose chain is broken."""
    world = make_world(tmp_path)
    contract = tmp_path / "digest.prose.md"
    contract.write_text(digest_contract())
    assert _hz(world.home, "heinzel", "new", str(contract)).returncode == 0
    shown = json.loads(_hz(world.home, "heinzel", "show", "notes-digest", "--json").stdout)
    spine = world.home / "heinzel" / shown["heinzel"]["id"] / "session.jsonl"
    lines = spine.read_bytes().splitlines(keepends=True)
    spine.write_bytes(lines[0] + b"garbage{{{\n" + b"".join(lines[1:]))
    before = spine.read_bytes()
    refused = _hz(world.home, "heinzel", "report", "notes-digest", "checked it")
    assert refused.returncode == 1 and refused.stderr.startswith("HZE001: notes-digest: ")
    assert spine.read_bytes() == before


def test_a_report_retried_with_its_request_id_is_logged_once(tmp_path: Path) -> None:
    """The user's report, like a chat or a wake, takes a request id: a retry (the client
    never heard the answer) finds its line and adds none; another id is another line."""
    world = make_world(tmp_path)
    contract = tmp_path / "digest.prose.md"
    contract.write_text(digest_contract())
    assert _hz(world.home, "heinzel", "new", str(contract)).returncode == 0
    for request_id, line in (("r1", "checked it"), ("r1", "checked it"), ("r2", "checked it")):
        said = _hz(
            world.home, "heinzel", "report", "notes-digest", line, "--request-id", request_id
        )
        assert said.returncode == 0, said.stderr
    bad = _hz(world.home, "heinzel", "report", "notes-digest", "x", "--request-id", "a b")
    assert bad.returncode == 2 and bad.stderr.startswith("HZ"), bad.stderr
    other = _hz(world.home, "heinzel", "report", "notes-digest", "changed", "--request-id", "r1")
    assert other.returncode == 1 and other.stderr.startswith("HZS034: notes-digest: "), other
    log = json.loads(_hz(world.home, "heinzel", "actions", "notes-digest", "--json").stdout)
    lines = [e["line"] for e in log["items"] if e["what"] == "reported"]
    assert lines == ["checked it", "checked it"]


async def test_a_queued_report_delivered_again_after_a_crash_is_logged_once(
    tmp_path: Path,
) -> None:
    """A report queued for a spine another process held gets the inbox request's id: if a
    crash comes between carrying it out and removing it, the next delivery adds no line."""
    world = make_world(tmp_path)
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        made = await kernel.new(text=digest_contract())
        request = ops.ReportRequest(ref=made.id, line="moved the section by hand")
        stored = queue(kernel.home, made.id, ops.REPORT, request)
        assert stored.arguments["request_id"] == stored.request_id
        assert await deliver_queued(kernel, {made.id}) == []
        Inbox(kernel.home.heinzel_dir(made.id)).admit(stored)  # as if the removal never came
        assert await deliver_queued(kernel, {made.id}) == []
        log = await kernel.actions(ref=made.id)
    finally:
        await kernel.close()
    assert [e.line for e in log.items if e.what == "reported"] == ["moved the section by hand"]
