"""Issue 15 item 2: ``hz doctor`` checks each configured provider end to end.

Each provider's wire stub (``tests/support/wire``) answers the check's one
tiny question, streamed and through a tool, as a turn would ask it; a
refusal, a missing key and the daemon's own environment are checked too.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest

from tests.support.env import hz_env
from tests.support.homes import HZ
from tests.support.wire.providers import KEY, PROVIDERS, Provider, heinzel_on
from tests.support.wire.server import Status, ToolCall

PING = ToolCall("ping", {"word": "ok"})


def _checks(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, object]]:
    return {item["model"]: item for item in orjson.loads(result.stdout)["items"]}


@pytest.mark.parametrize("provider", PROVIDERS, ids=[p.name for p in PROVIDERS])
def test_issue15_item2_doctor_asks_each_provider_one_streamed_tool_question(
    tmp_path: Path, provider: Provider
) -> None:
    with provider.stub([PING]) as stub:
        spec = provider.spec(stub)
        world, _ = heinzel_on(tmp_path, spec)
        doctor = world.hz("doctor", "--json", **provider.env(stub))
        exchanges = stub.exchanges
    checks = _checks(doctor)
    assert set(checks) == {"local", spec}
    found = checks[spec]
    assert found["ok"] is True and found["used_by"] == ["notes-digest"]
    assert found["tokens"] == 180 and isinstance(found["seconds"], float)
    assert found["priced"] is provider.priced
    assert checks["local"]["ok"] is True and "stand-in" in str(checks["local"]["note"])
    assert len(exchanges) == 1 and exchanges[0].body.get("stream") is True
    assert "ping" in orjson.dumps(exchanges[0].body).decode()
    assert KEY not in doctor.stdout + doctor.stderr


def test_issue15_item2_doctor_says_a_refused_key_with_its_code_and_what_to_do(
    tmp_path: Path,
) -> None:
    provider = next(p for p in PROVIDERS if p.name == "openai-chat")
    with provider.stub([Status(401, message="Incorrect API key provided")]) as stub:
        world, _ = heinzel_on(tmp_path, provider.spec(stub))
        doctor = world.hz("doctor", check=False, **provider.env(stub))
    assert doctor.returncode == 1
    lines = doctor.stdout.splitlines()
    failed = next(line for line in lines if line.startswith("FAIL  openai-chat:gpt-4o"))
    assert "HZE022" in failed and "Incorrect API key" in failed
    assert "check the key" in lines[lines.index(failed) + 1]
    assert KEY not in doctor.stdout + doctor.stderr


def test_issue15_item2_doctor_without_a_key_sends_nothing_and_says_which_variable(
    tmp_path: Path,
) -> None:
    provider = next(p for p in PROVIDERS if p.name == "anthropic")
    with provider.stub([PING]) as stub:
        world, _ = heinzel_on(tmp_path, provider.spec(stub))
        env = provider.env(stub)
        del env["ANTHROPIC_API_KEY"]
        doctor = world.hz("doctor", "--json", check=False, ANTHROPIC_API_KEY="", **env)
        exchanges = stub.exchanges
    found = _checks(doctor)[provider.spec(stub)]
    assert doctor.returncode == 1 and not exchanges
    assert found["code"] == "HZE011" and "ANTHROPIC_API_KEY" in str(found["problem"])
    assert "_FILE" in str(found["hint"])


def test_issue15_item2_doctor_checks_from_the_daemon_with_the_daemons_environment(
    tmp_path: Path,
) -> None:
    """The key is in the daemon's environment, not in the shell that runs ``hz doctor``: the
    check runs where turns run, so it passes (and the other way round it would fail)."""
    provider = next(p for p in PROVIDERS if p.name == "openai-chat")
    with provider.stub([PING]) as stub:
        world, _ = heinzel_on(tmp_path, provider.spec(stub))
        world.hz("heinzel", "pause", "notes-digest")  # no turn of its own asks the stub
        daemon_env = hz_env(world.home, embedded=False, **provider.env(stub))
        subprocess.run([*HZ, "daemon", "start"], env=daemon_env, check=True, timeout=120)
        try:
            shell = hz_env(world.home, embedded=False, OPENAI_API_KEY="", OPENAI_BASE_URL="")
            doctor = subprocess.run(
                [*HZ, "doctor"], env=shell, capture_output=True, text=True, timeout=120
            )
        finally:
            subprocess.run([*HZ, "daemon", "stop"], env=daemon_env, timeout=120)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert doctor.stdout.startswith("checked from the daemon")
    assert "ok    openai-chat:gpt-4o (used by notes-digest): answered in" in doctor.stdout


@pytest.mark.parametrize("name", ["ollama", "openai-compatible"])
def test_doctor_names_where_it_asked_a_server_that_does_not_answer(
    tmp_path: Path, name: str
) -> None:
    """An unreachable local server was reported without its URL, the first thing to check;
    and the local stand-in's line said nothing of why it has no answer time."""
    provider = next(p for p in PROVIDERS if p.name == name)
    with provider.stub([PING]) as stub:
        spec, env = provider.spec(stub), provider.env(stub)
        base_url = stub.base_url
    world, _ = heinzel_on(tmp_path, spec)
    doctor = world.hz("doctor", check=False, **env)
    assert doctor.returncode == 1
    lines = doctor.stdout.splitlines()
    failed = next(line for line in lines if line.startswith(f"FAIL  {spec}"))
    assert "HZE020" in failed and f"(asked at {base_url}" in failed, failed
    assert "ok    local: built in, nothing to ask" in doctor.stdout
