"""Session 11 attacks on ``/mcp``, the MCP head on the daemon's wire, with a real daemon.

A chatty MCP client must not flood the daemon's log, a GET must not hold a
stream that never carries an event, and a refused resource reads as our
coded line.
"""

from __future__ import annotations

import httpx

from hz_kernel.daemon.mcp_endpoint import MCP_PATH
from hz_kernel.home import Home
from hz_kernel.logfiles import log_path
from tests.integration.daemon.daemon_helpers import discovery

CALLS = 20


def _mcp(home: Home) -> tuple[str, dict[str, str]]:
    found = discovery(home)
    headers = {
        "Authorization": f"Bearer {found.token}",
        "Accept": "application/json, text/event-stream",
    }
    return found.address + MCP_PATH, headers


def _log_lines(home: Home) -> list[str]:
    return log_path(home.root).read_text(encoding="utf-8").splitlines()


def test_s11_mcp_calls_do_not_write_a_log_line_each(shared_home: Home) -> None:
    url, headers = _mcp(shared_home)
    before = len(_log_lines(shared_home))
    with httpx.Client(headers=headers, timeout=30) as client:
        for index in range(CALLS):
            answer = client.post(url, json={"jsonrpc": "2.0", "id": index, "method": "tools/list"})
            assert answer.status_code == 200, answer.text
    added = _log_lines(shared_home)[before:]
    assert len(added) < CALLS // 2, added


def test_s11_a_get_on_mcp_is_refused_at_once_not_held_open(shared_home: Home) -> None:
    url, headers = _mcp(shared_home)
    answer = httpx.get(url, headers={**headers, "Accept": "text/event-stream"}, timeout=10)
    assert answer.status_code == 405
    assert answer.json()["code"] == "HZD011"
    assert "GET" in answer.json()["message"]


def test_s11_a_transcript_uri_with_a_bad_turn_is_our_coded_line(shared_home: Home) -> None:
    url, headers = _mcp(shared_home)
    read = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "resources/read",
        "params": {"uri": "hz://transcript/../../etc/passwd"},
    }
    answer = httpx.post(url, headers=headers, json=read, timeout=30)
    message = answer.json()["error"]["message"]
    assert message.startswith("HZD010: hz://transcript/"), message
    assert "Value error" not in message
