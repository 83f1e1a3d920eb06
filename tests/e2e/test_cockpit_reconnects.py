"""Issue 13 item 4: a cockpit whose daemon dies reconnects to the next one by itself.

The real ``hz`` cockpit runs in tmux, attached to a daemon started with
``hz daemon start``. The daemon is SIGKILLed; while none runs, a turn runs
from the command line on an embedded kernel and a key that needs the
kernel is pressed. Then a new daemon starts (a new port, a new token in
``daemon.json``). Without a key press, the cockpit shows ``reconnecting…``,
attaches to the new daemon and shows the turn that ran meanwhile on the
heinzel's page. A second time, a message sent from the composer while
reconnecting goes out once to the next daemon. A third time, ``q`` quits.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import orjson
import pytest

from hz_kernel.home import Home
from tests.support.tmux import Tmux, cockpit_command, daemon_env, hz
from tests.tui import homes, worlds


def spine_events(home: Home, heinzel_id: str) -> list[dict[str, object]]:
    lines = (home.heinzel_dir(heinzel_id) / "session.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines if line.strip()]


def kill_daemon(home: Home) -> int:
    """SIGKILL the daemon ``daemon.json`` names and wait until it is gone; its pid."""
    pid = int(json.loads(home.discovery_path.read_text())["pid"])
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.05)
    return pid


def start_daemon(env: dict[str, str], home: Home, pids: list[int]) -> int:
    """``hz daemon start`` (explicitly: whatever the CLI's default); the new daemon's pid."""
    started = hz(env, "--home", str(home.root), "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    pid = int(json.loads(started.stdout)["pid"])
    assert pid not in pids
    pids.append(pid)
    return pid


def test_a_cockpit_reconnects_to_a_restarted_daemon_and_catches_up(
    tmp_path: Path, tmux: Tmux
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HZ_NOW", homes.NOW)  # the world's clock is the one the daemons run on
        world = asyncio.run(worlds.build(tmp_path, names=("notes-digest",)))
    home = world.home
    heinzel_id = world.ids["notes-digest"]
    env = daemon_env(home.root, HZ_NOW=homes.NOW, NO_COLOR="1")
    pids: list[int] = []
    try:
        first = start_daemon(env, home, pids)
        first_token = json.loads(home.discovery_path.read_text())["token"]
        tmux.start(cockpit_command(env, exported=("HZ_", "PYDANTIC", "NO_")))
        tmux.wait_for(lambda s: f"daemon (pid {first})" in s, "the first daemon in the header")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "1 · last" in s, "the heinzel page with its one turn")

        # The daemon dies; a turn runs meanwhile on an embedded kernel; a key finds no kernel.
        kill_daemon(home)
        tmux.wait_for(lambda s: "reconnecting…" in s, "reconnecting… in the header")
        world.add_note("wednesday.md", "# Wednesday\n- fixed the crash\n")
        embedded = {**env, "HZ_EMBEDDED": "1"}
        woke = hz(embedded, "--home", str(home.root), "heinzel", "wake", "notes-digest")
        assert woke.returncode == 0, woke.stdout + woke.stderr
        tmux.keys("w")
        shown = tmux.wait_for(lambda s: "not connected" in s, "the not-connected toast")
        assert "HZD040" not in shown and "HZD110" in shown and "1 · last" in shown

        # A new daemon (new port, new token): attached without a key press, caught up.
        second = start_daemon(env, home, pids)
        assert json.loads(home.discovery_path.read_text())["token"] != first_token
        shown = tmux.wait_for(
            lambda s: f"daemon (pid {second})" in s and "2 · last" in s,
            "the new daemon in the header and the turn that ran meanwhile",
        )
        assert "reconnecting…" not in shown

        # Again, with a message sent from the composer while the cockpit reconnects.
        kill_daemon(home)
        tmux.wait_for(lambda s: "reconnecting…" in s, "reconnecting… again")
        tmux.keys("i", *"after the crash", "Enter")
        tmux.wait_for(lambda s: "Not sent yet" in s, "the message kept for later")
        third = start_daemon(env, home, pids)
        tmux.wait_for(
            lambda s: f"daemon (pid {third})" in s and "3 · last" in s,
            "the message delivered by the third daemon as a turn",
        )
        inbox = home.heinzel_dir(heinzel_id) / "inbox"
        admitted = [
            json.loads(path.read_text())
            for path in [*inbox.glob("*.json"), *inbox.glob("delivered/*.json")]
        ]
        sent = [r["request_id"] for r in admitted if r.get("message") == "after the crash"]
        assert len(sent) == 1, "the message sent while reconnecting was admitted once"
        taken = [
            event
            for event in spine_events(home, heinzel_id)
            if event["kind"] == "turn.started" and sent[0] in event["data"]["request_ids"]
        ]
        assert len(taken) == 1, "the message sent while reconnecting went out once"
        # The composer's text is the kernel's (issue 14 item 4): cleared, the message in history.
        kept = json.loads(next((home.root / "cockpit").glob("composer-*.json")).read_text())
        assert (kept["text"], kept["outgoing"], kept["history"]) == ("", None, ["after the crash"])

        # Quitting while reconnecting is prompt: nothing waits on the daemon that is gone.
        kill_daemon(home)
        tmux.wait_for(lambda s: "reconnecting…" in s, "reconnecting… a third time")
        tmux.keys("Escape", "Escape", "q")
        tmux.assert_exits("the cockpit did not exit on q while reconnecting", within=10)
    finally:
        hz(env, "daemon", "stop")
        for pid in pids:
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)
