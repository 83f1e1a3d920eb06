"""Issue 15 item 1: the model's tools in a real turn — granted, journalled, bounded, resumable.

A scripted model (the OpenAI-compatible wire stub) calls each tool against real
files, a real git repository, a real HTTP server and a real upstream heinzel;
refusals come back to the model as coded results and land in the spine. A
real ``hz`` process is killed between ``tool.started`` and its close: a
replay-safe call runs again on resume, an unsafe one is settled interrupted
and its effect happens once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hz_kernel.contracts import compile_contract, render_template
from hz_kernel.engine.tools import TOOLS, files
from hz_kernel.engine.tools import git as git_tools
from hz_kernel.engine.tools.base import SHOWN_HEAD_CHARS, SHOWN_TAIL_CHARS
from hz_kernel.engine.tools.grant import Grant
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import read_body
from tests.support.homes import World, checkout_repo, digest_contract, git, make_world
from tests.support.marking_tool import MARK
from tests.support.openai_stub import OpenAIStub, ToolCall

ROOT = Path(__file__).resolve().parents[3]
DRAFT = {"output": "digest", "text": "- fixed the login bug\n", "report": "drafted 1"}
PAGE = "hello from the status page"


@pytest.fixture
def page_url() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 answering every GET with ``PAGE``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/status"
    finally:
        server.shutdown()
        server.server_close()


def reader_contract(model: str, url: str) -> str:
    """A heinzel whose inputs name a notes folder, a repository, a page and an upstream."""
    return f"""---
name: "reader"
description: "Reads with every tool."
hz:
  inputs:
    notes: {{source: files, method: glob, args: {{pattern: "**/*.md", root: notes}}}}
    commits: {{source: git, method: commits, args: {{repo: checkout}}}}
    page: {{source: http, method: get, args: {{url: "{url}"}}}}
    upstream:
      source: heinzel
      method: approved_output
      args: {{heinzel: notes-digest, output: digest}}
  requires: [files:read, git:read, http:read, heinzels:read, documents:write]
  publishes:
    - capability: documents.place_draft
      asset: "doc:reports/reader.md#reader"
  outputs:
    digest: {{}}
  approvers: [owner]
  agent:
    model: "{model}"
---
# Reader

### Goal

Read what the inputs name with tools, then draft.
"""


async def _make(world: World, *texts: str) -> list[str]:
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        ids = []
        for text in texts:
            made = await kernel.new(text=text)
            await kernel.approve(ref=made.id)
            ids.append(made.id)
        return ids
    finally:
        await kernel.close()


async def _wake(world: World, name: str, request_id: str | None = None) -> Any:
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        return await kernel.wake(ref=name, request_id=request_id)
    finally:
        await kernel.close()


def _tool_events(world: World, heinzel_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (str(e["kind"]), e["data"])  # type: ignore[misc]
        for e in world.spine(heinzel_id)
        if str(e["kind"]).startswith("tool.")
    ]


def _results(world: World, heinzel_id: str, turn: str) -> list[dict[str, Any]]:
    records = read_body(world.home / "heinzel" / heinzel_id, turn) or []
    return [r for r in records if r["type"] == "tool_result"]


def _seen_by_model(stub: OpenAIStub) -> list[str]:
    """The tool results the model was sent, in order, from the requests' bodies."""
    last = stub.requests[-1]["messages"]
    return [str(m["content"]) for m in last if m["role"] == "tool"]


async def test_a_scripted_model_calls_each_tool_and_each_call_is_journalled(
    tmp_path: Path, page_url: str
) -> None:
    world = make_world(tmp_path)
    checkout_repo(world)
    (world.reports / "reader.md").write_text("# Report\n\n## Reader\n\nkept by the reader\n")
    calls = [
        ToolCall("read_file", {"path": "notes/monday.md"}),
        ToolCall("list_folder", {"path": "notes"}),
        ToolCall("search", {"pattern": "check(out)?", "path": "notes"}),
        ToolCall("git_log", {"repo": "checkout", "limit": 3}),
        ToolCall("git_show", {"repo": "checkout", "rev": "HEAD~1"}),
        ToolCall("git_diff", {"repo": "checkout", "base": "HEAD~1", "head": "HEAD"}),
        ToolCall("fetch_url", {"url": page_url}),
        ToolCall("read_approved_output", {"heinzel": "notes-digest", "output": "digest"}),
        ToolCall("read_kept_section", {}),
        ToolCall("git_log", {"repo": "checkout", "rev": "--output=/tmp/owned"}),
    ]
    with OpenAIStub([*calls, ToolCall("draft", DRAFT)]) as stub:
        _, reader = await _make(world, digest_contract(), reader_contract(stub.spec(), page_url))
        report = await _wake(world, "reader")
    assert report.disposition == "drafted"
    results = _results(world, reader, report.turn)
    expected = [
        "fixed the login bug",
        "monday.md",
        "tuesday.md:2: - reviewed the checkout flow",
        "Retry failed payments",
        "Merge pull request #41",
        "f42.py",
        PAGE,
        "notes-digest has no approved digest yet",
        "kept by the reader",
    ]
    for record, wanted in zip(results, expected, strict=False):
        assert "error" not in record, record
        assert wanted in record["result"], (record["tool"], record["result"])
    assert results[-1]["error"] == "HZE064"
    events = _tool_events(world, reader)
    started = [d for k, d in events if k == "tool.started"]
    finished = [d for k, d in events if k == "tool.finished"]
    assert [d["tool"] for d in started] == [c.tool for c in calls]
    assert [d["call"] for d in finished] == list(range(len(calls)))
    assert all(d["replay_safe"] and len(d["args_hash"]) == 64 for d in started)
    assert all(len(d["result_hash"]) == 64 for d in finished[:-1])
    # Arguments and results never reach the spine.
    spine = (world.home / "heinzel" / reader / "session.jsonl").read_text()
    assert PAGE not in spine and "monday.md" not in spine and "--output" not in spine
    seen = _seen_by_model(stub)
    assert len(seen) == len(calls) and PAGE in seen[6] and "HZE064" in seen[-1]
    assert not Path("/tmp/owned").exists()


async def test_refusals_are_coded_results_the_model_sees_and_the_spine_records(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    (tmp_path / "secret.md").write_text("outside the roots\n")
    (world.notes / "link.md").symlink_to(tmp_path / "secret.md")
    os.mkfifo(world.notes / "pipe.md")
    calls = [
        ToolCall("git_log", {"repo": "notes"}),
        ToolCall("read_file", {"path": "notes/../secret.md"}),
        ToolCall("read_file", {"path": "notes/link.md"}),
        ToolCall("read_file", {"path": "notes/pipe.md"}),
        ToolCall("read_file", {"path": "notes"}),
        ToolCall("search", {"pattern": "outside", "path": "notes"}),
    ]
    with OpenAIStub([*calls, ToolCall("draft", DRAFT)]) as stub:
        (heinzel,) = await _make(world, digest_contract(model=stub.spec()))
        report = await _wake(world, "notes-digest")
    assert report.disposition == "drafted"
    finished = [d for k, d in _tool_events(world, heinzel) if k == "tool.finished"]
    codes = [d.get("error") for d in finished]
    assert codes == ["HZE061", "HZE062", "HZE062", "HZE063", "HZE063", None]
    seen = _seen_by_model(stub)
    for code, result in zip(codes[:-1], seen, strict=False):
        assert f'"error":"{code}"' in result.replace(" ", "")
    # The search neither follows the link out nor waits on the FIFO.
    assert "outside the roots" not in seen[-1] and "no match" in seen[-1]


async def test_a_long_result_reaches_the_model_as_head_and_tail_flagged_truncated(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    big = "".join(f"line {n:05d}\n" for n in range(3000))
    (world.notes / "big.md").write_text(big)
    with OpenAIStub(
        [ToolCall("read_file", {"path": "notes/big.md"}), ToolCall("draft", DRAFT)]
    ) as stub:
        (heinzel,) = await _make(world, digest_contract(model=stub.spec()))
        report = await _wake(world, "notes-digest")
    (finished,) = [d for k, d in _tool_events(world, heinzel) if k == "tool.finished"]
    assert finished["truncated"] is True and finished["size"] == len(big)
    (record,) = _results(world, heinzel, report.turn)
    assert record["result"] == big
    (seen,) = [json.loads(result) for result in _seen_by_model(stub)]
    shown = seen["result"]
    assert seen["truncated"] is True and seen["size"] == len(big)
    assert shown.startswith("line 00000") and shown.endswith("line 02999\n")
    assert "line 01500" not in shown and "characters left out" in shown
    assert len(shown) < SHOWN_HEAD_CHARS + SHOWN_TAIL_CHARS + 200


def _spine_tools(world: World, heinzel_id: str) -> list[tuple[str, int, bool]]:
    return [
        (kind, int(d["call"]), bool(d.get("rerun") or d.get("found_on_resume")))
        for kind, d in _tool_events(world, heinzel_id)
    ]


async def test_a_replay_safe_call_cut_by_a_kill_runs_again_on_resume(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    repo = checkout_repo(world)
    params = {"name": "changes", "repo": str(repo), "document": "reports/CHANGELOG.md"}
    text = render_template("changelog", {**params, "model": "local"})
    (heinzel,) = await _make(world, text)
    crashed = world.hz("heinzel", "wake", "changes", "--request-id", "r1", check=False,
                       HZ_CRASH_AT="tool.started")  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert _spine_tools(world, heinzel) == [("tool.started", 0, False)]
    report = await _wake(world, "changes", request_id="r1")
    assert report.disposition == "drafted"
    tools = _spine_tools(world, heinzel)
    assert tools[:3] == [("tool.started", 0, False), ("tool.started", 0, True),
                         ("tool.finished", 0, False)]  # fmt: skip
    assert [t for t in tools if t[0] == "tool.finished"] == [
        ("tool.finished", n, False) for n in range(5)
    ]
    assert "tool.interrupted" not in world.kinds(heinzel)
    assert world.kinds(heinzel).count("draft.placed") == 1


async def test_an_unsafe_call_cut_by_a_kill_is_settled_interrupted_and_never_runs_twice(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    marks = world.notes / "marks.txt"
    marks.write_text("")
    replies = [ToolCall("mark", {"file": "notes/marks.txt"}), ToolCall("draft", DRAFT)]
    with OpenAIStub(replies) as stub:
        (heinzel,) = await _make(world, digest_contract(model=stub.spec()))
        crashed = subprocess.run(
            [sys.executable, "-m", "tests.support.marking_tool", "heinzel", "wake",
             "notes-digest", "--request-id", "r1"],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
            env=world.env(HZ_CRASH_AT="tool:before-result"),
        )  # fmt: skip
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        assert marks.read_text() == "marked\n"
        TOOLS.register(MARK)
        try:
            report = await _wake(world, "notes-digest", request_id="r1")
        finally:
            TOOLS.unregister(MARK.name)
    assert report.disposition == "drafted"
    assert marks.read_text() == "marked\n"
    assert _spine_tools(world, heinzel) == [("tool.started", 0, False),
                                            ("tool.interrupted", 0, False)]  # fmt: skip
    (seen,) = _seen_by_model(stub)
    assert '"error":"HZE069"' in seen.replace(" ", "")
    assert len(stub.requests) == 2


async def test_hostile_tool_calls_end_in_coded_results_and_the_turn_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack pass: a search pattern that backtracks for minutes froze the daemon; a path of
    ``~nosuchuser`` crashed the turn (a RuntimeError) and left it running; a file name with a
    newline forged a second entry in a listing. Each is now a result the model reads."""
    monkeypatch.setattr(files, "SEARCH_TIMEOUT_S", 2.0)
    world = make_world(tmp_path)
    (world.notes / "redos.txt").write_text(("a" * 399 + "!\n") * 50)
    (world.notes / "new\nfake.md -> secret").write_text("x\n")
    calls = [
        ToolCall("search", {"pattern": "(a|aa)+$", "path": "notes/redos.txt", "max_hits": 1}),
        ToolCall("read_file", {"path": "~nosuchuser/x"}),
        ToolCall("list_folder", {"path": "notes"}),
    ]
    with OpenAIStub([*calls, ToolCall("draft", DRAFT)]) as stub:
        (heinzel,) = await _make(world, digest_contract(model=stub.spec()))
        report = await _wake(world, "notes-digest")
    assert report.disposition == "drafted"
    finished = [d for k, d in _tool_events(world, heinzel) if k == "tool.finished"]
    assert [d.get("error") for d in finished] == ["HZE063", "HZE062", None]
    seen = _seen_by_model(stub)
    assert "took over 2 s" in seen[0]
    listing = json.loads(seen[2])["result"].splitlines()
    assert "new\\nfake.md -> secret  2 bytes" in listing, listing
    assert not any(line.startswith("fake.md") for line in listing), "no forged entry"


def test_the_git_tools_never_run_a_repositorys_signature_program(tmp_path: Path) -> None:
    """Attack pass: with ``log.showSignature`` and ``gpg.program`` in a repository's own config,
    ``git_log`` and ``git_show`` of a signed commit ran that program."""
    repo = tmp_path / "evil"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    signed = (
        f"tree {tree}\nauthor P <p@x> 1700000000 +0000\ncommitter P <p@x> 1700000000 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    made = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=signed, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    git(repo, "update-ref", "refs/heads/main", made)
    marker = tmp_path / "ran"
    program = tmp_path / "gpg.sh"
    program.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    program.chmod(0o755)
    git(repo, "config", "log.showSignature", "true")
    git(repo, "config", "gpg.program", str(program))
    grant = Grant(capabilities=frozenset({"git:read"}), base_dir=tmp_path, repos=(repo,))
    assert "signed" in git_tools.git_log(git_tools.GitLogArgs(repo=str(repo)), grant)
    assert "signed" in git_tools.git_show(git_tools.GitShowArgs(repo=str(repo), rev="HEAD"), grant)
    assert not marker.exists()


def test_a_git_file_input_grants_no_history_of_its_repository(tmp_path: Path) -> None:
    """A ``git: file`` input was approved to read one file: the git tools may not roam the
    repository's history, while a ``commits`` input still grants them."""
    text = (
        "---\nname: reader\nhz:\n  requires: [git:read]\n  inputs:\n"
        "    runbook: {source: git, method: file, args: {repo: team.git, path: docs/a.md}}\n"
        "---\n### Goal\nKeep it.\n"
    )
    contract = compile_contract(text, source="c")
    grant = Grant.of(
        contract, base_dir=tmp_path, heinzel_root=None, resolve_asset=lambda a: (tmp_path, None)
    )
    assert grant.repos == ()
    logged = compile_contract(text.replace("method: file", "method: commits").replace(
        ", path: docs/a.md", ""), source="c")  # fmt: skip
    granted = Grant.of(
        logged, base_dir=tmp_path, heinzel_root=None, resolve_asset=lambda a: (tmp_path, None)
    )
    assert granted.repos == (tmp_path / "team.git",)
