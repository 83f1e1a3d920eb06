"""Attack on issue 14, point 2: ``e`` on the review desk never leaves the terminal behind.

The real ``hz`` in tmux on a daemon. An editor that cannot be started
(missing, not executable) is one coded line (HZU061) and the cockpit keeps
answering keys; an editor whose path has spaces runs, at the draft's line.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.support.env import hz_env
from tests.support.tmux import HZ, WAIT_S, Tmux, hz
from tests.tui import worlds

EDITOR_SCRIPT = '#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/called"\n'


@pytest.mark.parametrize("kind", ["missing", "not executable", "path with spaces"])
def test_attack2_e_with_an_editor_that_cannot_start_keeps_the_cockpit_answering(
    tmp_path: Path, tmux: Tmux, kind: str
) -> None:
    world = asyncio.run(worlds.build(tmp_path, names=("notes-digest",)))
    folder = tmp_path / "my editors"
    folder.mkdir()
    editor = folder / "ed"
    editor.write_text(EDITOR_SCRIPT)
    editor.chmod(0o755 if kind == "path with spaces" else 0o644)
    setting = "/nonexistent/editor" if kind == "missing" else str(editor)
    env = hz_env(
        world.home.root,
        embedded=False,
        HZ_TICK_SECONDS="3600",
        PYDANTIC_AI_NO_BANNER="1",
        TERM="xterm-256color",
    )
    env.pop("VISUAL", None)
    started = hz(env, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        knobs = [f"{k}={v}" for k, v in env.items() if k.startswith(("HZ_", "PYDANTIC"))]
        command = " ".join(["env", "-u", "VISUAL", *knobs, f"EDITOR='{setting}'", str(HZ)])
        tmux.run("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "40", command)
        tmux.wait_for(lambda s: "notes-digest" in s, "the home table")
        tmux.keys("F4")
        # ``e`` edits the draft shown: its diff must be on screen, not only the queue.
        tmux.wait_for(lambda s: "draft 1 of 1" in s and "+++ this draft" in s, "the draft's diff")
        tmux.keys("e")
        if kind == "path with spaces":
            called = folder / "called"
            deadline = time.monotonic() + WAIT_S
            while not called.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            arguments = called.read_text().splitlines()
            assert arguments[0].startswith("+") and arguments[1] == str(
                world.document("notes-digest")
            )
        else:
            shown = tmux.wait_for(lambda s: "HZU061" in s, "the editor's coded line")
            assert "Traceback" not in shown
        tmux.keys("b")  # the cockpit has the terminal back and answers keys
        tmux.wait_for(lambda s: "diff your edits" in s, "the desk answering b")
        tmux.keys("Escape", "q")
        deadline = time.monotonic() + WAIT_S
        while tmux.run("list-sessions") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not tmux.run("list-sessions"), "the cockpit did not exit on q"
    finally:
        stopped = hz(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr
