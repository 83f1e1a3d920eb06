"""Issue 15 item 2: a provider key comes from the environment or a private file, goes to the
provider, and is written nowhere in the home: not the spine, a body, a log or the daemon's
records."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.env import hz_env
from tests.support.homes import HZ
from tests.support.wire.openai_responses import OpenAIResponsesStub
from tests.support.wire.providers import DRAFT, KEY, NOW, events, heinzel_on
from tests.support.wire.server import Status, ToolCall


def _wait_for_a_finished_turn(
    spine: Callable[[str], list[dict[str, object]]], heinzel_id: str
) -> None:
    """Until the daemon's turn is over; the deadline only bounds a hung run."""
    deadline = time.monotonic() + 90
    while not any(e["kind"] == "turn.finished" for e in spine(heinzel_id)):
        assert time.monotonic() < deadline, "the daemon never finished the turn"
        time.sleep(0.1)


def _files_holding(root: Path, needle: bytes) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and needle in p.read_bytes()]


def test_issue15_item2_a_key_from_a_0600_file_reaches_the_provider_and_no_file_of_the_home(
    tmp_path: Path,
) -> None:
    """The daemon's first tick runs the turn (so daemon.log and daemon.start.json exist), a
    retry passes through the journal, and the key is in none of the home's files."""
    key_file = tmp_path / "openai.key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)
    with OpenAIResponsesStub([Status(429, retry_after=1), ToolCall("draft", DRAFT)]) as stub:
        env = {
            "OPENAI_BASE_URL": stub.base_url,
            "OPENAI_API_KEY_FILE": str(key_file),
            "HZ_MODEL_WAIT_SCALE": "0.001",
            "HZ_NOW": NOW,
            "HZ_TICK_SECONDS": "3600",
        }
        world, heinzel_id = heinzel_on(tmp_path, "openai:gpt-4o", **env)
        daemon_env = hz_env(world.home, embedded=False, **env)
        try:
            started = subprocess.run([*HZ, "daemon", "start"], capture_output=True, text=True,
                                     env=daemon_env, timeout=60)  # fmt: skip
            assert started.returncode == 0, started.stderr
            _wait_for_a_finished_turn(world.spine, heinzel_id)
        finally:
            subprocess.run([*HZ, "daemon", "stop"], env=daemon_env, capture_output=True,
                           timeout=60)  # fmt: skip
        exchanges = stub.exchanges
    finished = events(world, heinzel_id, "turn.finished")
    assert [f["disposition"] for f in finished] == ["drafted"]
    assert len(exchanges) == 2
    assert all(f"Bearer {KEY}" == x.headers.get("authorization") for x in exchanges)
    assert len(events(world, heinzel_id, "attempt.retry")) == 1
    assert (world.home / "daemon.log").is_file()
    assert _files_holding(world.home, KEY.encode()) == []
    assert _files_holding(world.home, KEY[-12:].encode()) == []


def test_issue15_item2_a_key_file_others_can_read_is_refused_in_one_coded_line(
    tmp_path: Path,
) -> None:
    key_file = tmp_path / "openai.key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o644)
    with OpenAIResponsesStub([ToolCall("draft", DRAFT)]) as stub:
        env = {"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY_FILE": str(key_file)}
        world, heinzel_id = heinzel_on(tmp_path, "openai:gpt-4o", **env)
        wake = world.hz("heinzel", "wake", "notes-digest", check=False, HZ_NOW=NOW, **env)
        requests = stub.requests
    assert requests == []
    assert "Traceback" not in wake.stderr
    said = (wake.stdout + wake.stderr).strip()
    assert "HZE066" in said and "chmod 600" in said and KEY not in said
    finished = events(world, heinzel_id, "turn.finished")
    assert [f["disposition"] for f in finished] == ["failed"]
    assert str(finished[0]["reason"]).startswith("HZE066")
    assert _files_holding(world.home, KEY.encode()) == []
