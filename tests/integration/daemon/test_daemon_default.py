"""Issue 13 item 1: the daemon by default — a write starts it, a read never does, and the
opt-outs (``--embedded``, ``HZ_EMBEDDED=1``, ``[daemon] autostart = false``) keep the CLI
embedded. Item 8: an embedded ``hz tick`` refuses beside a live daemon of its home."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from daemon_helpers import HZ, Daemons, discovery, hz, make_home, one_coded_line, pid_alive

from hz_kernel.home import Home
from tests.support.env import hz_env


def hz_default(
    home: Home, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``hz`` as a user runs it: without the test suite's ``HZ_EMBEDDED=1``."""
    full = hz_env(home.root, embedded=False, **({"HZ_TICK_SECONDS": "3600"} | (env or {})))
    return subprocess.run([*HZ, *args], capture_output=True, text=True, env=full, timeout=60)


def started_pid(home: Home, daemons: Daemons) -> int | None:
    """The pid of the daemon serving ``home`` (tracked for teardown), or None."""
    if not home.discovery_path.exists():
        return None
    pid = discovery(home).pid
    daemons.track(pid)
    return pid


def test_issue13_item1_a_write_starts_the_daemon_a_read_never_does(
    tmp_path: Path, daemons: Daemons
) -> None:
    home = make_home(tmp_path / "home")
    listed = hz_default(home, "heinzel", "list")
    assert listed.returncode == 0, listed.stderr
    assert started_pid(home, daemons) is None, "a read-only command started a daemon"

    wrote = hz_default(home, "heinzel", "rename", "h0", "first")
    assert wrote.returncode == 0, wrote.stderr
    assert wrote.stdout == "renamed to first\n"
    pid = started_pid(home, daemons)
    assert pid is not None and pid_alive(pid)

    again = hz_default(home, "heinzel", "rename", "first", "h0")
    assert again.returncode == 0, again.stderr
    assert started_pid(home, daemons) == pid, "the second write did not adopt the daemon"
    shown = hz_default(home, "heinzel", "show", "h0", "--json")
    assert shown.returncode == 0 and '"name": "h0"' in shown.stdout
    stopped = hz(home.root, "daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr


@pytest.mark.parametrize(
    ("how", "args", "env", "settings"),
    [
        ("--embedded", ("--embedded",), {}, None),
        ("HZ_EMBEDDED=1", (), {"HZ_EMBEDDED": "1"}, None),
        ("autostart = false", (), {}, {"autostart": False}),
    ],
)
def test_issue13_item1_the_opt_outs_keep_a_write_embedded(
    tmp_path: Path,
    daemons: Daemons,
    how: str,
    args: tuple[str, ...],
    env: dict[str, str],
    settings: dict[str, bool] | None,
) -> None:
    home = make_home(tmp_path / "home", daemon=settings)
    wrote = hz_default(home, *args, "heinzel", "rename", "h0", "first", env=env)
    assert wrote.returncode == 0, wrote.stderr
    assert started_pid(home, daemons) is None, f"{how} still started a daemon"
    assert not (home.root / "daemon.log").exists()


def test_issue13_item8_an_embedded_tick_refuses_beside_a_live_daemon(
    tmp_path: Path, daemons: Daemons
) -> None:
    home = make_home(tmp_path / "home")
    pid = daemons.start(home)["pid"]
    ticked = hz(home.root, "tick", "--once")
    assert ticked.returncode == 1
    line = one_coded_line(ticked, "HZD101")
    assert f"the daemon (pid {pid})" in line and "already ticks" in line
    assert ticked.stdout == ""
    assert pid_alive(pid)
    stopped = hz(home.root, "daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert hz(home.root, "tick", "--once").returncode == 0
