"""The real ``hz`` binary in a real terminal: tmux runs the cockpit against a running daemon.

A throwaway home holds one pending draft in a Markdown file. ``hz daemon
start`` starts the daemon for it; ``hz`` (the cockpit) attaches to it in a
120×40 tmux window. Keys open the review queue and approve the draft; the
result is read back from the document (its tag line is gone) and from the
screen (``tmux capture-pane``). tmux runs on a private socket, so no user
session is touched.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.env import hz_env
from tests.tui import worlds

HZ = Path(sys.executable).parent / "hz"
WAIT_S = 15.0


class Tmux:
    """One detached tmux session on a private server socket."""

    def __init__(self, socket: str, session: str) -> None:
        self.socket = socket
        self.session = session

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def keys(self, *keys: str) -> None:
        """Send keys one at a time, apart: Escape then a letter quickly would read as Alt."""
        for key in keys:
            self.run("send-keys", "-t", self.session, key)
            time.sleep(0.3)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session)

    def wait_for(self, check: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT_S
        while True:
            shown = self.screen()
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n{shown}")
            time.sleep(0.1)


def hz(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HZ), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    name = f"hz-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    session = Tmux(name, name)
    try:
        yield session
    finally:
        session.run("kill-server")


def test_approve_a_draft_from_the_review_queue_through_the_daemon(
    tmp_path: Path, tmux: Tmux
) -> None:
    world = asyncio.run(worlds.build(tmp_path, names=("notes-digest",)))
    document = world.document("notes-digest")
    assert worlds.TAG in document.read_text()
    env = hz_env(
        world.home.root,
        embedded=False,
        HZ_TICK_SECONDS="3600",
        PYDANTIC_AI_NO_BANNER="1",
        TERM="xterm-256color",
    )
    started = hz(env, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        command = " ".join(
            [*(f"{k}={v}" for k, v in env.items() if k.startswith(("HZ_", "PYDANTIC"))), str(HZ)]
        )
        tmux.run("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "40", command)
        shown = tmux.wait_for(lambda s: "notes-digest" in s, "the home table")
        assert "daemon (pid" in shown
        tmux.keys("F4")
        tmux.wait_for(lambda s: "draft 1 of 1" in s, "the review queue")
        tmux.keys("a")
        shown = tmux.wait_for(lambda s: "notes-digest: draft approved" in s, "the approval")
        assert "nothing waits for review" in shown
        approved = document.read_text()
        assert worlds.TAG not in approved and "shipped search" in approved
        tmux.keys("Escape", "q")
        deadline = time.monotonic() + WAIT_S
        while tmux.run("list-sessions") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not tmux.run("list-sessions"), "the cockpit did not exit on q"
    finally:
        stopped = hz(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr


def test_issue14_item3_review_since_last_approved_then_reject_and_undo(
    tmp_path: Path, tmux: Tmux
) -> None:
    """The real ``hz`` on a daemon: the desk diffs the new draft against the text approved
    last time; ``x`` rejects, ``u`` within the window takes it back: the draft still waits."""
    world = asyncio.run(worlds.build_redrafted(tmp_path, names=("notes-digest",)))
    document = world.document("notes-digest")
    settings = world.home.settings_path
    # A window far longer than the test needs: the keys never race the clock.
    settings.write_text(settings.read_text() + "\n[cockpit]\nundo_seconds = 600\n")
    env = hz_env(
        world.home.root,
        embedded=False,
        HZ_TICK_SECONDS="3600",
        PYDANTIC_AI_NO_BANNER="1",
        TERM="xterm-256color",
    )
    started = hz(env, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        command = " ".join(
            [*(f"{k}={v}" for k, v in env.items() if k.startswith(("HZ_", "PYDANTIC"))), str(HZ)]
        )
        tmux.run("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "40", command)
        tmux.wait_for(lambda s: "notes-digest" in s, "the home table")
        tmux.keys("F4")
        shown = tmux.wait_for(lambda s: "shipped fuzzy" in s, "the diff since approved")
        # The approval's date is whatever the machine's clock said when the world was built.
        assert re.search(r"since last approved \(\d{4}-\d\d-\d\d", shown), shown
        assert "- - shipped fuzzy search" in shown and "+ - shipped search" in shown, shown
        tmux.keys("x")
        tmux.wait_for(lambda s: "1 rejected: u undoes" in s, "the held rejection")
        tmux.keys("u")
        shown = tmux.wait_for(lambda s: "reject undone" in s, "the undo")
        tmux.wait_for(lambda s: "draft 1 of 1" in s, "the draft back in the queue")
        listed = hz(env, "drafts", "--json")
        assert listed.returncode == 0 and "notes-digest" in listed.stdout
        assert worlds.TAG in document.read_text()
        tmux.keys("Escape", "q")
        deadline = time.monotonic() + WAIT_S
        while tmux.run("list-sessions") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not tmux.run("list-sessions"), "the cockpit did not exit on q"
        assert worlds.TAG in document.read_text(), "nothing was held, so nothing was sent"
    finally:
        stopped = hz(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr


def test_issue14_item4_a_multi_line_steer_from_the_composer_in_tmux(
    tmp_path: Path, tmux: Tmux
) -> None:
    """issue 14 item 4: Ctrl+J (tmux ``C-j``) starts a line, Enter sends both as one steer.

    Shift+Enter reaches an application under tmux as a plain Enter, so Ctrl+J
    is the new line that works in every terminal; the message lands in the
    running turn with its newline, and ``K`` then asks "Stop think?".
    """
    world = asyncio.run(worlds.build(tmp_path, names=("notes-digest",)))
    heinzel_id = world.ids["notes-digest"]
    env = hz_env(
        world.home.root,
        embedded=False,
        HZ_TICK_SECONDS="3600",
        HZ_MODEL_DELAY_MS="3000",
        PYDANTIC_AI_NO_BANNER="1",
        TERM="xterm-256color",
    )
    started = hz(env, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        command = " ".join(
            [*(f"{k}={v}" for k, v in env.items() if k.startswith(("HZ_", "PYDANTIC"))), str(HZ)]
        )
        tmux.run("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "40", command)
        tmux.wait_for(lambda s: "notes-digest" in s and "daemon (pid" in s, "the home table")
        tmux.keys("Enter")
        tmux.wait_for(
            lambda s: "Live turn" in s and "· last" in s and "running:" not in s,
            "the heinzel page, no turn running (the daemon's first tick may have run one)",
        )
        world.add_note(
            "wednesday.md", "# Wednesday\n" + "".join(f"- item {n}\n" for n in range(14))
        )
        tmux.keys("w")
        tmux.wait_for(lambda s: "running: think" in s, "the woken turn thinking")
        tmux.keys("i", "C-t")
        tmux.wait_for(lambda s: "STEER" in s, "the composer in STEER mode")
        tmux.run("send-keys", "-t", tmux.session, "-l", "name the owners")
        tmux.keys("C-j")
        tmux.run("send-keys", "-t", tmux.session, "-l", "and the dates")
        shown = tmux.wait_for(
            lambda s: "name the owners" in s and "and the dates" in s, "two lines typed"
        )
        assert "Not sent" not in shown
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "1 steered" in s, "the steer taken by the running turn")
        inbox = world.home.heinzel_dir(heinzel_id) / "inbox"
        admitted = [json.loads(path.read_text()) for path in inbox.glob("*.json")]
        steers = [r for r in admitted if r.get("kind") == "chat"]
        assert [(r["message"], r["mode"]) for r in steers] == [
            ("name the owners\nand the dates", "steer")
        ]
        spine = (world.home.heinzel_dir(heinzel_id) / "session.jsonl").read_text().splitlines()
        steered = [json.loads(line) for line in spine if '"turn.steered"' in line]
        assert [e["data"]["request_id"] for e in steered] == [steers[0]["request_id"]]
        tmux.keys("Escape", "K")
        tmux.wait_for(lambda s: "Stop think?" in s, "the stop question naming the step")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "the turn was stopped" in s, "the turn stopped")
    finally:
        stopped = hz(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr
