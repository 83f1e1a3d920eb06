"""Issue 13 items 4 and 5: a remote cockpit (``hz --connect``) outlives its daemon.

A daemon serves home A on a fixed port (``[daemon] port``), reached
through a TCP forward (what ``ssh -L`` does). The real ``hz --connect``
cockpit runs in tmux with an empty ``HZ_HOME`` of its own. The daemon is
SIGKILLed: the header says ``reconnecting…`` and a key that needs the
kernel says "not connected" (``HZD110``, never ``HZD040``). While none
runs, a turn runs from the command line on an embedded kernel. Then a new
daemon starts on the same port with a new token, which is copied into the
token file as a user would. Without a key press the cockpit re-attaches
through the same forward, says the daemon is one it adopted, and shows the
turn that ran meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
from pathlib import Path

import pytest

from tests.e2e.test_cockpit_reconnects import kill_daemon, start_daemon
from tests.support.forward import PortForward
from tests.support.tmux import Tmux, daemon_env, hz, remote_cockpit_command
from tests.tui import homes, worlds


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def copy_token(home_a: Path, token_file: Path) -> str:
    """What the user does after a restart: copy ``daemon.json``'s token into the token file."""
    token = str(json.loads((home_a / "daemon.json").read_text())["token"])
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    return token


def test_issue13_remote_cockpit_reconnects_to_a_daemon_restarted_on_the_same_port(
    tmp_path: Path, tmux: Tmux, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_NOW", homes.NOW)  # the world's first turns too
    world = asyncio.run(worlds.build(tmp_path / "a", names=("notes-digest",)))
    home = world.home
    port = free_port()
    with (home.root / "hz.toml").open("a") as toml:
        toml.write(f"\n[daemon]\nport = {port}\n")
    env = daemon_env(home.root, HZ_NOW=homes.NOW, NO_COLOR="1")
    laptop = tmp_path / "laptop"
    laptop.mkdir(mode=0o700)
    token_file = laptop / "token"
    pids: list[int] = []
    forward: PortForward | None = None
    try:
        first = start_daemon(env, home, pids)
        first_token = copy_token(home.root, token_file)
        forward = PortForward(port)
        laptop_env = {
            "HZ_HOME": str(laptop / "empty"),
            "HZ_NOW": homes.NOW,
            "XDG_STATE_HOME": str(laptop / "state"),
            "HOME": str(laptop),
            "PYDANTIC_AI_NO_BANNER": "1",
            "TERM": "xterm-256color",
            "NO_COLOR": "1",
        }
        url = f"http://127.0.0.1:{forward.port}"
        tmux.start(remote_cockpit_command(laptop_env, url, token_file), width=200)
        tmux.wait_for(lambda s: f"remote daemon (pid {first})" in s, "the daemon in the header")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "1 · last" in s, "the heinzel page with its one turn")

        # The daemon dies: the header says so and a key finds no kernel, politely.
        kill_daemon(home)
        shown = tmux.wait_for(lambda s: "reconnecting…" in s, "reconnecting… in the header")
        assert f"(pid {first})" in shown, "the header names the daemon it lost"
        world.add_note("wednesday.md", "# Wednesday\n- fixed the crash\n")
        embedded = {**env, "HZ_EMBEDDED": "1"}
        woke = hz(embedded, "--home", str(home.root), "heinzel", "wake", "notes-digest")
        assert woke.returncode == 0, woke.stdout + woke.stderr
        tmux.keys("w")
        shown = tmux.wait_for(lambda s: "not connected" in s, "the not-connected toast")
        assert "HZD110" in shown and "HZD040" not in shown

        # A new daemon on the same port with a new token: re-attached without a key press.
        second = start_daemon(env, home, pids)
        assert copy_token(home.root, token_file) != first_token
        shown = tmux.wait_for(
            lambda s: f"remote daemon (pid {second})" in s and "2 · last" in s,
            "the new daemon in the header and the turn that ran meanwhile",
        )
        assert "reconnecting…" not in shown
        assert "· adopted" in shown, "the header says the cockpit did not start this daemon"
        tmux.keys("w")
        shown = tmux.wait_for(lambda s: "notes-digest: turn" in s, "a wake the new daemon ran")
        assert "HZD040" not in shown
    finally:
        if forward is not None:
            forward.close()
        hz(env, "daemon", "stop")
        for pid in pids:
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)
