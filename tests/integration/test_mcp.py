"""Issue 18 item 1: the MCP head, driven by the official SDK's client over stdio and HTTP.

Real processes throughout: ``hz mcp`` started by the SDK's stdio client on a
home where one heinzel has drafted (embedded, ``HZ_EMBEDDED=1``), and a real
daemon serving ``/mcp`` behind its token. The tools must be the operations
table exactly; every read tool answers, ``chat`` and ``approve`` change what
the CLI then sees, and a refused call is a tool error with a coded line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from hz_kernel.mcp_head import TOOLS, draft_uri, transcript_uri
from hz_kernel.operations import OPERATIONS
from tests.support.drafted import Drafted, build_drafted, copy_drafted

pytestmark = pytest.mark.xdist_group("mcp")

_original: Drafted | None = None


@pytest.fixture
def drafted(tmp_path: Path) -> Drafted:
    """A fresh copy of one home where ``dig`` has drafted once (built once per worker)."""
    global _original
    if _original is None:
        _original = build_drafted(tmp_path.parent / f"mcp-drafted-{os.getpid()}")
    return copy_drafted(_original, tmp_path / "world")


def _stdio(world: Drafted) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hz_kernel.cli", "mcp"],
        env={**world.hz_env(), "HZ_EMBEDDED": "1"},
    )
    return Client(params, cache=None, read_timeout_seconds=60)


@contextlib.asynccontextmanager
async def _daemon(world: Drafted) -> AsyncIterator[dict[str, Any]]:
    started = world.hz("daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    report = json.loads(started.stdout)
    try:
        yield json.loads((world.home / "daemon.json").read_text())
    finally:
        stopped = world.hz("daemon", "stop")
        if stopped.returncode != 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(report["pid"], signal.SIGKILL)


def _http(discovery: dict[str, Any], token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    return Client(
        streamable_http_client(f"{discovery['address']}/mcp", http_client=http),
        cache=None,
        read_timeout_seconds=60,
    )


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def _read_tools_answer(client: Client, world: Drafted) -> None:
    """Every tool that only reads, called with what it needs, answers with its data."""
    key = world.draft_key()
    turn = world.draft_turn()
    calls: dict[str, dict[str, Any]] = {
        "heinzel_list": {},
        "heinzel_show": {"ref": "dig"},
        "heinzel_contract": {"ref": "dig"},
        "heinzel_templates": {},
        "heinzel_inbox": {"ref": "dig"},
        "heinzel_conversation": {"ref": "dig"},
        "drafts": {},
        "draft_diff": {"key": key},
        "draft_review": {"key": key},
        "turn_body": {"ref": "dig", "turn": turn},
        "turn_transcript": {"ref": "dig", "turn": turn},
        "composer_get": {"ref": "dig"},
        "costs_today": {},
        "doctor": {},
        "graph": {},
        "heinzel_actions": {"ref": "dig"},
        "team_status": {},
        "team_log": {},
    }
    readers = {name for name, op in TOOLS.items() if not op.writes}
    assert readers <= set(calls), readers - set(calls)
    for name in sorted(readers):
        data = _data(await client.call_tool(name, calls[name]))
        assert data, name
    listed = _data(await client.call_tool("heinzel_list", {}))
    assert [item["name"] for item in listed["items"]] == ["dig"]
    actions = world.hz("heinzel", "actions", "dig", "--json")
    assert actions.returncode == 0, actions.stderr
    logged = _data(await client.call_tool("heinzel_actions", {"ref": "dig"}))
    assert logged == json.loads(actions.stdout), "the action log reads the same on both heads"
    assert {e["what"] for e in logged["items"]} >= {"read", "wrote"}
    drafts = _data(await client.call_tool("drafts", {}))
    assert [d["key"] for d in drafts["items"]] == [key]


async def _tools_are_the_operations(client: Client) -> None:
    tools = (await client.list_tools()).tools
    served = {op.name.replace(".", "_") for op in OPERATIONS.values() if not op.cockpit_only}
    assert {t.name for t in tools} == served
    assert "composer_save" not in served, "the cockpit's own composer is no tool"
    for tool in tools:
        assert tool.description is not None
        assert ". Arguments: " in tool.description and ". Returns " in tool.description
        for argument in tool.input_schema.get("properties", {}):
            assert f"{argument}" in tool.description, (tool.name, argument)
    by_name = {t.name: t for t in tools}
    assert by_name["heinzel_list"].annotations.read_only_hint is True
    assert by_name["approve"].annotations.read_only_hint is False
    assert by_name["heinzel_chat"].input_schema["required"] == ["ref", "message"]


async def _refusals_are_coded_tool_errors(client: Client) -> None:
    unknown = await client.call_tool("heinzel_show", {"ref": "nobody"})
    assert unknown.is_error and unknown.content[0].text.startswith("HZ")
    bad = await client.call_tool("heinzel_chat", {"ref": "dig"})
    assert bad.is_error and bad.content[0].text.startswith("HZD010: message: ")
    extra = await client.call_tool("heinzel_list", {"colour": "red"})
    assert extra.is_error and extra.content[0].text.startswith("HZD010: colour: ")
    misnamed = await client.call_tool("heinzel_show", {"name": "dig"})
    said = misnamed.content[0].text
    assert misnamed.is_error and "ref: " in said and "name: " in said, said


async def _resources(client: Client, world: Drafted) -> None:
    key = world.draft_key()
    listed = (await client.list_resources()).resources
    assert [str(r.uri) for r in listed] == [draft_uri(key)]
    draft = await client.read_resource(draft_uri(key))
    assert draft.contents[0].text.strip() and draft.contents[0].text in world.document.read_text()
    transcript = await client.read_resource(transcript_uri("dig", world.draft_turn()))
    assert json.loads(transcript.contents[0].text)["turn"] == world.draft_turn()


async def test_mcp_over_stdio_serves_the_operations_table(drafted: Drafted) -> None:
    async with _stdio(drafted) as client:
        await _tools_are_the_operations(client)
        await _read_tools_answer(client, drafted)
        await _refusals_are_coded_tool_errors(client)
        await _resources(client, drafted)
        sent = _data(
            await client.call_tool(
                "heinzel_chat",
                {"ref": "dig", "message": "mind the release", "request_id": "mcp-chat-1"},
            )
        )
        assert sent["request_id"] == "mcp-chat-1"
        talk = _data(await client.call_tool("heinzel_conversation", {"ref": "dig"}))
        assert [m["request_id"] for m in talk["items"]] == ["mcp-chat-1"]
        decided = _data(await client.call_tool("approve", {"ref": drafted.draft_key()}))
        assert decided["what"] == "draft", decided
    _no_draft_waits(drafted)


def _no_draft_waits(world: Drafted) -> None:
    shown = world.hz("drafts", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == {"items": []}


async def test_mcp_over_http_on_the_daemon_behind_its_token(drafted: Drafted) -> None:
    async with _daemon(drafted) as discovery:
        async with _http(discovery, discovery["token"]) as client:
            await _tools_are_the_operations(client)
            await _read_tools_answer(client, drafted)
            await _refusals_are_coded_tool_errors(client)
            decided = _data(await client.call_tool("approve", {"ref": drafted.draft_key()}))
            assert decided["what"] == "draft", decided
        _no_draft_waits(drafted)
        for token in (None, "not-the-token"):
            refused = httpx.post(
                f"{discovery['address']}/mcp",
                headers={"Authorization": f"Bearer {token}"} if token else {},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
            assert refused.status_code == 401
            assert refused.json()["code"] == "HZD030"
        foreign = httpx.post(
            f"{discovery['address']}/mcp",
            headers={"Authorization": f"Bearer {discovery['token']}", "Host": "evil.example"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
        assert foreign.status_code == 403 and foreign.json()["code"] == "HZD031"
        _malformed_posts_are_coded_and_the_daemon_serves_on(discovery)


#: Messages that are no JSON-RPC message, and the JSON-RPC error code each gets.
MALFORMED = [
    (b"not json", -32700),
    (b'{"jsonrpc": "2.0", "id": 7, "method": 5}', -32600),
    (b"[1, 2]", -32600),
    (b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', -32600),
]
#: A tool call whose arguments are no object: answered with its id and a coded line.
STRING_ARGUMENTS = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "drafts", "arguments": "x"},
}


def _bad_arguments(answer: dict[str, Any]) -> None:
    assert answer["id"] == 3 and answer["error"]["code"] == -32602, answer
    assert answer["error"]["message"].startswith("HZD010: arguments: must be an object"), answer


def _coded(answer: dict[str, Any], code: int) -> None:
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None, answer
    assert answer["error"]["code"] == code, answer
    assert answer["error"]["message"].startswith("HZD138: "), answer
    assert "\n" not in answer["error"]["message"]


def _malformed_posts_are_coded_and_the_daemon_serves_on(discovery: dict[str, Any]) -> None:
    headers = {
        "Authorization": f"Bearer {discovery['token']}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    url = f"{discovery['address']}/mcp"
    for body, code in MALFORMED:
        refused = httpx.post(url, headers=headers, content=body)
        assert refused.status_code == 400, refused.text
        _coded(refused.json(), code)
    listed = httpx.post(
        url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    )
    assert listed.status_code == 200, listed.text
    assert {t["name"] for t in listed.json()["result"]["tools"]} == set(TOOLS)
    called = httpx.post(url, headers=headers, json=STRING_ARGUMENTS)
    assert called.status_code == 400, called.text
    _bad_arguments(called.json())
    huge = httpx.post(url, headers=headers, content=b" " * (5 << 20))
    assert huge.status_code == 413, huge.text
    assert huge.json()["error"]["message"].startswith("HZD012: POST /mcp: request body over")


def test_malformed_lines_over_stdio_are_coded_errors_and_hz_mcp_serves_on(
    drafted: Drafted,
) -> None:
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "sloppy", "version": "1"},
        },
    }
    lines = [
        *(body for body, _ in MALFORMED),
        json.dumps(hello).encode(),
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}',
        json.dumps(STRING_ARGUMENTS).encode(),
    ]
    served = subprocess.Popen(
        [sys.executable, "-m", "hz_kernel.cli", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**drafted.hz_env(), "HZ_EMBEDDED": "1"},
    )
    assert served.stdin is not None and served.stdout is not None
    watchdog = threading.Timer(60, served.kill)  # a hung hz fails the test, never hangs it
    watchdog.start()
    try:
        served.stdin.write(b"\n".join(lines) + b"\n")
        served.stdin.flush()
        # Every answer is read before stdin closes: at its end hz mcp stops serving.
        answers = [json.loads(served.stdout.readline()) for _ in range(len(MALFORMED) + 3)]
        served.stdin.close()
        assert served.wait(timeout=60) == 0
    finally:
        watchdog.cancel()
        served.kill()
    for answer, (_, code) in zip(answers, MALFORMED, strict=False):
        _coded(answer, code)
    served_on = {a["id"]: a for a in answers[len(MALFORMED) :]}
    assert set(served_on) == {1, 2, 3}
    assert {t["name"] for t in served_on[2]["result"]["tools"]} == set(TOOLS)
    _bad_arguments(served_on[3])


def test_a_stdio_client_that_goes_away_mid_answer_ends_hz_mcp_cleanly(drafted: Drafted) -> None:
    """Attack pass: a client that closed its end while hz answered got HZX001 (a traceback's
    one line, "please report it") and exit 1."""
    hello = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "gone", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    served = subprocess.Popen(
        [sys.executable, "-m", "hz_kernel.cli", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**drafted.hz_env(), "HZ_EMBEDDED": "1"},
    )
    assert served.stdin is not None and served.stdout is not None
    served.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in hello))
    served.stdin.flush()
    assert served.stdout.read(10).startswith(b"{")
    served.stdout.close()
    served.stdin.close()
    assert served.stderr is not None
    assert served.wait(timeout=60) == 0
    err = served.stderr.read()
    assert b"HZX001" not in err
