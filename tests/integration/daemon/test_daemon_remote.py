"""Issue 13 item 5 on the command line: a turn printed live from the feed, and ``--connect``.

Real daemons on real homes with the offline local model; every command is
the real ``hz`` binary in its own process. ``HZ_MODEL_DELAY_MS`` holds each
streamed chunk, so a turn is still running when ``tail`` joins it.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import one_coded_line

from hz_kernel.daemon.protocol import Discovery
from tests.support.env import hz_env
from tests.support.forward import PortForward
from tests.tui import homes, worlds
from tests.tui.worlds import LONG_NOTES

HZ = Path(sys.executable).parent / "hz"
TIMEOUT_S = 90


def env_for(world: worlds.World, **extra: str) -> dict[str, str]:
    knobs = {"HZ_NOW": homes.NOW, "HZ_TICK_SECONDS": "3600", "PYDANTIC_AI_NO_BANNER": "1"}
    return hz_env(world.home.root, **(knobs | extra))


def hz(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HZ), *args], env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def digest_world(root: Path) -> worlds.World:
    """A world with the approved heinzel ``notes-digest`` (one turn run) and a long stream.

    Built embedded: a write would otherwise start a daemon without the model's delay,
    which ``daemon_on`` would then adopt (and no test would stop).
    """
    world = worlds.make_world(root)
    world.add_note("wednesday.md", "# Wednesday\n" + LONG_NOTES)
    contract = root / "notes-digest.prose.md"
    contract.write_text(worlds.digest("notes-digest"))
    env = env_for(world, HZ_EMBEDDED="1")  # set up in place: no daemon is started for it
    made = hz(env, "heinzel", "new", str(contract))
    assert made.returncode == 0, made.stderr
    assert hz(env, "approve", "notes-digest").returncode == 0
    # A first turn takes the notes in, so a daemon's first tick finds nothing to wake for.
    assert hz(env, "heinzel", "wake", "notes-digest").returncode == 0
    return world


@contextlib.contextmanager
def daemon_on(world: worlds.World, delay_ms: int) -> Iterator[worlds.World]:
    """A daemon on ``world`` whose model holds each chunk ``delay_ms``; stopped after."""
    started = hz(env_for(world, HZ_MODEL_DELAY_MS=str(delay_ms)), "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        yield world
    finally:
        hz(env_for(world), "daemon", "stop")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[worlds.World]:
    """A digest world with a daemon whose model holds each chunk 150 ms."""
    with daemon_on(digest_world(tmp_path / "world"), 150) as world:
        yield world


def assert_whole_turn(out: str) -> None:
    """Steps, the streamed output once and in order, the effect, and wake's closing line."""
    order = [
        "started (asked)",
        "✓ gather",
        "· think: model call 1 to local",
        "### Notes",
        "- fixed the login bug",
        "item 13 of the long week",
        "✓ think",
        "· effect documents.place_draft started",
        "· effect documents.place_draft done",
        "· draft placed in doc:reports/notes-digest.md#digest",
        "✓ act",
    ]
    positions = [out.find(part) for part in order]
    assert -1 not in positions and positions == sorted(positions), out
    assert out.count("### Notes") == 1 and out.count("item 13 of the long week") == 1, out
    assert out.splitlines()[-1].startswith("notes-digest: drafted: Drafted digest"), out


def test_wake_follow_prints_the_turn_live_and_exits_when_it_ends(served: worlds.World) -> None:
    """Issue 13 item 5: ``wake --follow`` through the daemon: steps, streamed output, effects."""
    woke = hz(env_for(served), "heinzel", "wake", "notes-digest", "--follow")
    assert woke.returncode == 0, woke.stderr
    assert_whole_turn(woke.stdout)


def test_wake_follow_with_an_embedded_kernel(tmp_path: Path) -> None:
    """Issue 13 item 5: with no daemon the embedded kernel's own feed prints the turn."""
    world = digest_world(tmp_path / "world")
    env = env_for(world, HZ_MODEL_DELAY_MS="5", HZ_EMBEDDED="1")
    woke = hz(env, "heinzel", "wake", "notes-digest", "--follow")
    assert woke.returncode == 0, woke.stderr
    assert_whole_turn(woke.stdout)


def test_wake_follow_of_a_failing_turn_exits_1_as_wake_does(tmp_path: Path) -> None:
    """Issue 13 item 5: the exit code of ``wake --follow`` is ``wake``'s (1: the turn failed)."""
    world = worlds.make_world(tmp_path / "world")
    plain = tmp_path / "plain"
    plain.mkdir()
    env = env_for(world, HZ_EMBEDDED="1")  # no daemon left behind
    made = hz(
        env, "heinzel", "new", "--template", "weekly-report",
        "--param", f"repo={plain}", "--param", "notes=notes",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert hz(env, "approve", "weekly-report").returncode == 0
    woke = hz(env, "heinzel", "wake", "weekly-report", "--follow")
    assert woke.returncode == 1
    assert woke.stdout.splitlines()[-1] == "weekly-report: failed", woke.stdout
    assert woke.stderr.startswith("HZT030: ") and woke.stderr.count("\n") == 1, woke.stderr


def test_tail_waits_for_the_next_turn_and_exits_when_it_ends(served: worlds.World) -> None:
    """Issue 13 item 5: ``tail`` with no turn running follows the next one that starts."""
    env = env_for(served)
    tail = subprocess.Popen(
        [str(HZ), "heinzel", "tail", "notes-digest"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert tail.stdout is not None
        first = tail.stdout.readline()
        assert first == "notes-digest: no turn is running; waiting for the next one\n", first
        assert hz(env, "heinzel", "wake", "notes-digest").returncode == 0
        out, err = tail.communicate(timeout=TIMEOUT_S)
    finally:
        tail.kill()
    assert tail.returncode == 0, err
    assert_whole_turn(out)


def test_tail_joins_a_running_turn_from_where_it_stands(tmp_path: Path) -> None:
    """Issue 13 item 5: ``tail`` mid-turn prints what ran so far once, then the rest live.

    Each chunk is held 1.5 s, so the turn is still streaming when ``tail`` joins it.
    """
    with daemon_on(digest_world(tmp_path / "world"), 1500) as served:
        joined_mid_turn(served)


def joined_mid_turn(served: worlds.World) -> None:
    env = env_for(served)
    assert hz(env, "heinzel", "wake", "notes-digest").stdout.startswith(
        "notes-digest: started (turn "
    )
    bodies = next((served.home.root / "heinzel").glob("hz-*")) / "turns"
    deadline = time.monotonic() + TIMEOUT_S
    while not any(b'"chunk"' in body.read_bytes() for body in bodies.glob("*.jsonl")):
        assert time.monotonic() < deadline, "the turn never streamed"
        time.sleep(0.05)
    tail = hz(env, "heinzel", "tail", "notes-digest")
    assert tail.returncode == 0, tail.stderr
    assert "no turn is running" not in tail.stdout
    assert_whole_turn(tail.stdout)


def test_tail_without_a_daemon_says_why_in_one_coded_line(tmp_path: Path) -> None:
    """Issue 13 item 5: only the process that runs a turn sees it; tail needs the daemon."""
    world = digest_world(tmp_path / "world")
    tail = hz(env_for(world), "heinzel", "tail", "notes-digest")
    assert tail.returncode == 1
    assert "hz daemon start" in one_coded_line(tail, "HZU123")


def test_connect_runs_commands_through_a_port_forward_without_the_local_home(
    served: worlds.World, tmp_path: Path
) -> None:
    """Issue 13 item 5: ``hz --connect URL --token-file F`` lists and wakes through a forward
    (its ``Host`` names the forward's port) with ``HZ_HOME`` naming nothing that exists."""
    found = Discovery.model_validate_json(served.home.discovery_path.read_bytes())
    token = tmp_path / "token"
    token.write_text(found.token + "\n")
    token.chmod(0o600)
    forward = PortForward(int(found.address.rsplit(":", 1)[1]))
    env = env_for(served) | {
        "HZ_HOME": str(tmp_path / "no-such-home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    url = f"http://127.0.0.1:{forward.port}"
    try:
        listed = hz(env, "--connect", url, "--token-file", str(token), "heinzel", "list")
        assert listed.returncode == 0, listed.stderr
        assert "notes-digest" in listed.stdout
        woke = hz(
            env, "--connect", url, "--token-file", str(token),
            "heinzel", "wake", "notes-digest", "--follow",
        )  # fmt: skip
        assert woke.returncode == 0, woke.stderr
        assert_whole_turn(woke.stdout)
    finally:
        forward.close()
    assert not (tmp_path / "no-such-home").exists()


LOCAL = ["--connect", "http://127.0.0.1:9"]


@pytest.mark.parametrize(
    ("args", "code", "exit_code"),
    [
        (["--connect", "http://127.0.0.1:9"], "HZU120", 2),
        (["--token-file", "TOKEN"], "HZU120", 2),
        (["--connect", "http://example.com:80", "--token-file", "TOKEN"], "HZU121", 2),
        (["--connect", "https://127.0.0.1:9", "--token-file", "TOKEN"], "HZU121", 2),
        (["--connect", "http://127.0.0.1:9", "--token-file", "MISSING"], "HZU122", 1),
        (["--connect", "http://127.0.0.1:9", "--token-file", "EMPTY"], "HZU122", 1),
        (["--connect", "http://127.0.0.1:9", "--token-file", "CONTROL"], "HZU122", 1),
        (["--connect", "http://127.0.0.1:9", "--token-file", "HUGE"], "HZU122", 1),
        ([*LOCAL, "--token-file", "TOKEN", "daemon", "status"], "HZU120", 2),
    ],
)  # fmt: skip
def test_connect_refuses_bad_options_in_one_coded_line(
    tmp_path: Path, args: list[str], code: str, exit_code: int
) -> None:
    """Issue 13 item 5: a missing or empty token file, one holding a control byte or far
    more than a token (never cut to its first bytes), a URL that is not this machine's
    loopback, half of the pair, or a command for this machine's daemon: one coded line."""
    (tmp_path / "token").write_text("abc\n")
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "control").write_bytes(b"abc\x00def\n")
    (tmp_path / "huge").write_bytes(b"a" * (1 << 20))
    named = {
        "TOKEN": "token",
        "MISSING": "missing",
        "EMPTY": "empty",
        "CONTROL": "control",
        "HUGE": "huge",
    }
    argv = [str(tmp_path / named[a]) if a in named else a for a in args]
    if argv[-2:] != ["daemon", "status"]:
        argv += ["heinzel", "list"]
    env = hz_env(embedded=False)
    result = subprocess.run(
        [str(HZ), *argv], env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert result.returncode == exit_code
    one_coded_line(result, code)


def test_wake_follow_carries_on_across_a_daemon_restart(tmp_path: Path) -> None:
    """Issue 13 items 3/5: ``wake --follow`` while ``hz daemon restart`` runs elsewhere: the
    turn pauses at a step boundary, the new daemon resumes it, and the follower re-attaches
    to the new daemon (new port, new token) and prints the rest once, exiting 0 — not
    ``HZD040: the daemon closed the feed``. Each chunk is held 2.5 s, so the turn is still
    thinking when the restart drains it."""
    with daemon_on(digest_world(tmp_path / "world"), 2500) as served:
        env = env_for(served)
        follow = subprocess.Popen(
            [str(HZ), "heinzel", "wake", "notes-digest", "--follow"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert follow.stdout is not None
            first = "".join(follow.stdout.readline() for _ in range(3))
            assert first.endswith("· think: model call 1 to local\n"), first
            restarted = hz(env, "daemon", "restart")
            assert restarted.returncode == 0, restarted.stderr
            assert "1 turn paused" in restarted.stdout, restarted.stdout
            out, err = follow.communicate(timeout=TIMEOUT_S)
        finally:
            follow.kill()
    assert follow.returncode == 0, err
    assert "HZD040" not in err
    assert_whole_turn(first + out)
