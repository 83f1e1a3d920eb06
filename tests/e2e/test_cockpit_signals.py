"""A closed terminal or a polite kill quits the cockpit as ``q`` does (attack pass, session 6).

The real ``hz`` cockpit runs in tmux on a daemon that is then SIGKILLed, so
the message typed next can be neither saved nor sent. SIGHUP (the terminal
went away) or SIGTERM then reaches the cockpit: before, the process died on
the spot — the text it had promised to send was lost and the terminal was
left in the alternate screen. Now it quits through the same path as ``q``:
the text is kept in ``<home>/cockpit/unsent-<id>.json``, the terminal gets
its screen back, and the exit status is the shell's for that signal.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_cockpit_reconnects import kill_daemon
from tests.support.tmux import Tmux, cockpit_command, daemon_env, hz
from tests.tui import homes, worlds


def cockpit_pid(tmux: Tmux) -> int:
    """The ``hz`` process under the pane's shell."""
    shell = tmux.run("display-message", "-p", "-t", tmux.session, "#{pane_pid}").strip()
    children = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout
    return int(children.split()[0])


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_quits_as_q_does_keeping_the_unsent_text_and_the_terminal(
    tmp_path: Path, tmux: Tmux, signum: signal.Signals
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HZ_NOW", homes.NOW)
        world = asyncio.run(worlds.build(tmp_path, names=("notes-digest",)))
    home = world.home
    heinzel_id = world.ids["notes-digest"]
    env = daemon_env(home.root, HZ_NOW=homes.NOW)
    started = hz(env, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        command = cockpit_command(env)
        tmux.start(f"sh -c '{command}; echo EXIT $?; sleep 600'")
        tmux.wait_for(lambda s: "notes-digest" in s, "the home table")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "1 · last" in s, "the heinzel page")
        kill_daemon(home)
        tmux.wait_for(lambda s: "reconnecting…" in s, "reconnecting… in the header")
        tmux.keys("i")
        tmux.type_text("typed while the daemon is dead")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "Not sent yet" in s, "the message kept for later")

        os.kill(cockpit_pid(tmux), signum)
        shown = tmux.wait_for(lambda s: "EXIT " in s, "the cockpit's exit")
        assert f"EXIT {128 + signum}" in shown, shown
        alternate = tmux.run("display-message", "-p", "-t", tmux.session, "#{alternate_on}")
        assert alternate.strip() == "0", "the terminal was left in the cockpit's screen"
        kept = json.loads((home.root / "cockpit" / f"unsent-{heinzel_id}.json").read_text())
        assert kept["state"]["text"] == "typed while the daemon is dead"
    finally:
        hz(env, "daemon", "stop")
