"""Issue 13 item 1 with the real ``hz`` binary in tmux: work outlives the window.

``hz`` alone starts the home's daemon and says so in its header; a turn
woken from the cockpit keeps running in the daemon after the cockpit quit,
and finishes there. Beside an ``hz --embedded`` cockpit that holds a
heinzel mid-turn, ``hz heinzel chat`` is not locked out: it exits 0 with
"queued" and the message is delivered exactly once. These runs drop the
suite's ``HZ_EMBEDDED=1``; every daemon they start is stopped at teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from hz_kernel.daemon.discovery import read_discovery
from hz_kernel.daemon.lifecycle import START_LOCK_NAME
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import body_path
from tests.support.tmux import Tmux, cockpit_command, daemon_env, hz
from tests.tui import homes, worlds

WAIT_S = 60.0


@pytest.fixture
def world(tmp_path: Path) -> Iterator[worlds.World]:
    """One approved digest heinzel that has not run yet; its daemon is stopped after."""
    made = worlds.make_world(tmp_path)
    made.add_note("wednesday.md", "# Wednesday\n" + worlds.LONG_NOTES)

    async def build() -> None:
        kernel = await Kernel.open(made.home)
        try:
            await worlds.add_heinzel(kernel, made, "notes-digest", wake=False)
        finally:
            await kernel.close()

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HZ_NOW", homes.NOW)
        asyncio.run(build())
    try:
        yield made
    finally:
        found = read_discovery(made.home)
        hz(env_of(made), "daemon", "stop")
        if found is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(found.pid, signal.SIGKILL)


def env_of(world: worlds.World, **extra: str) -> dict[str, str]:
    return daemon_env(world.home.root, HZ_NOW=homes.NOW, HZ_MODEL_DELAY_MS="150") | extra


def open_cockpit(tmux: Tmux, env: dict[str, str], *args: str) -> None:
    command = cockpit_command(env, *args, exported=("HZ_", "PYDANTIC", "TERM"))
    tmux.start(f"env -u HZ_EMBEDDED {command}")


def spine(home: Home) -> list[dict[str, object]]:
    (heinzel_id,) = home.heinzel_ids()
    path = home.heinzel_dir(heinzel_id) / "session.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def running_turn(home: Home) -> str | None:
    events = spine(home)
    started = [e["turn"] for e in events if e["kind"] == "turn.started"]
    ended = {e["turn"] for e in events if e["kind"] in ("turn.finished", "turn.skipped")}
    open_turns = [t for t in started if t not in ended]
    return str(open_turns[-1]) if open_turns else None


def cockpit_woken_turn(home: Home) -> str | None:
    """The open turn a cockpit ``w`` started (the daemon may run a turn of its own before it)."""
    running = running_turn(home)
    for event in spine(home):
        if event["turn"] == running and event["kind"] == "turn.started":
            asked = event["data"].get("request_ids", [])  # type: ignore[union-attr]
            return running if any(r.startswith("cockpit-") for r in asked) else None
    return None


def cockpit_exited(tmux: Tmux) -> bool:
    return not tmux.run("list-sessions")


def test_issue13_item1_hz_starts_the_daemon_and_a_turn_outlives_the_cockpit(
    world: worlds.World, tmux: Tmux
) -> None:
    home = world.home
    open_cockpit(tmux, env_of(world))
    # "· started here": the end of the header may be cut at 120 columns, the start is not.
    shown = tmux.wait_for(lambda s: "notes-digest" in s and "· started" in s, "the header")
    found = read_discovery(home)
    assert found is not None, "hz did not start a daemon (no daemon.json)"
    # The header keeps the kind and the pid in every form; the address when the width allows
    # (a test home's long path can push it out at 120 columns).
    assert f"daemon (pid {found.pid})" in shown

    tmux.keys("w")
    wait_until(lambda: cockpit_woken_turn(home) is not None, "the woken turn to start")
    turn = cockpit_woken_turn(home)
    tmux.keys("q")
    wait_until(lambda: cockpit_exited(tmux), "the cockpit to exit on q")
    assert running_turn(home) == turn, "the turn ended with the cockpit"
    quit_seq = len(spine(home))

    wait_until(lambda: running_turn(home) != turn, "the daemon to finish the turn")
    after = spine(home)[quit_seq:]
    finished = [e for e in after if e["kind"] == "turn.finished" and e["turn"] == turn]
    assert finished and finished[0]["data"]["disposition"] == "drafted"  # type: ignore[index]
    assert read_discovery(home) == found


def test_issue13_item1_chat_beside_an_embedded_cockpit_mid_turn_is_queued_and_delivered_once(
    world: worlds.World, tmux: Tmux
) -> None:
    home = world.home
    open_cockpit(tmux, env_of(world, HZ_TICK_SECONDS="1"), "--embedded")
    shown = tmux.wait_for(lambda s: "notes-digest" in s, "the home table")
    assert "embedded kernel" in shown
    tmux.keys("w")
    wait_until(lambda: running_turn(home) is not None, "the woken turn to start")
    turn = running_turn(home)

    chat = hz(env_of(world), "heinzel", "chat", "notes-digest", "add the dates")
    assert chat.returncode == 0, chat.stderr
    assert chat.stderr == "" and " queued" in chat.stdout, chat.stdout
    request_id = chat.stdout.split()[2]
    assert read_discovery(home) is None, "the chat started a daemon beside the embedded kernel"

    def delivered() -> list[dict[str, object]]:
        return [
            e
            for e in spine(home)
            if e["kind"] == "turn.started" and request_id in e["data"].get("request_ids", [])  # type: ignore[union-attr]
        ]

    wait_until(lambda: bool(delivered()), "the queued message to become a turn")
    wait_until(lambda: running_turn(home) is None, "the turns to end")
    time.sleep(2.5)  # two more ticks of the cockpit's kernel: none may deliver it again
    (started,) = delivered()
    inbox = home.heinzel_dir(home.heinzel_ids()[0]) / "inbox"
    kept = [p.name for p in [*inbox.glob("*.json"), *inbox.glob("delivered/*.json")]]
    assert kept.count(f"{request_id}.json") == 1
    keys = [k for e in spine(home) for k in e["data"].get("keys", []) if request_id in k]  # type: ignore[union-attr]
    assert len(keys) == 1, keys
    assert started["turn"] != turn
    tmux.keys("q")
    wait_until(lambda: cockpit_exited(tmux), "the cockpit to exit on q")


def _embedded_cockpit_mid_turn(world: worlds.World, tmux: Tmux, hold: Path) -> str:
    """``hz --embedded`` in tmux (the pane stays after it ends, to be read), its model held by
    ``hold`` (``HZ_MODEL_HOLD_FILE``), and notes-digest woken with ``w``: the running turn."""
    env = env_of(world, HZ_MODEL_HOLD_FILE=str(hold), HZ_TICK_SECONDS="3600")
    command = cockpit_command(env, "--embedded", exported=("HZ_", "PYDANTIC", "TERM"))
    tmux.start(f"env -u HZ_EMBEDDED {command}; sleep 600")
    tmux.wait_for(lambda s: "notes-digest" in s and "embedded kernel" in s, "the home table")
    tmux.keys("w")
    wait_until(lambda: running_turn(world.home) is not None, "the woken turn to start")
    return str(running_turn(world.home))


def test_hand_off_says_each_phase_and_starts_the_daemon_without_waiting_for_the_model(
    world: worlds.World, tmux: Tmux, tmp_path: Path
) -> None:
    """Session 6 (new-user pass): "Hand it to the daemon (it starts now …)" from ``hz
    --embedded`` mid-think. The model is held mid-answer (``HZ_MODEL_HOLD_FILE``): the
    terminal says at once that the turn is handed over, then that the daemon started and
    resumes it, all while the model still holds; released, the daemon finishes the turn."""
    home = world.home
    hold = tmp_path / "hold"
    turn = _embedded_cockpit_mid_turn(world, tmux, hold)
    body = body_path(home.heinzel_dir(home.heinzel_ids()[0]), turn)
    wait_until(lambda: body.exists() and b'"chunk"' in body.read_bytes(), "the answer to stream")
    hold.touch()
    tmux.keys("q")
    tmux.wait_for(lambda s: "Hand it to the daemon" in s, "the quit question")
    tmux.keys("Enter")  # the default with a turn running: hand it to the daemon
    shown = tmux.wait_for(lambda s: "started the daemon (pid" in s, "the daemon's start")
    assert hold.exists(), "the model was released before the hand-off said it was done"
    lines = [line.strip() for line in shown.splitlines() if line.strip()]
    handing = "handing 1 turn to the daemon (notes-digest): cut now, resumed there…"
    assert handing in lines
    started = next(line for line in lines if line.startswith("started the daemon (pid"))
    assert lines.index(handing) < lines.index(started)
    assert started.endswith("; it resumes notes-digest's turn")

    hold.unlink()
    wait_until(lambda: running_turn(home) != turn, "the daemon to finish the turn")
    events = [e for e in spine(home) if e["turn"] == turn]
    finished = [e for e in events if e["kind"] == "turn.finished"]
    assert finished and finished[0]["data"]["disposition"] == "drafted"  # type: ignore[index]


def test_quit_and_cut_says_which_turns_it_cut_and_that_they_resume(
    world: worlds.World, tmux: Tmux, tmp_path: Path
) -> None:
    """Session 7 (attack pass): "Quit and cut" left the terminal silent, while the hand-off
    narrates each phase. Now the terminal names the turn it cut and says it resumes."""
    hold = tmp_path / "hold"
    hold.touch()
    _embedded_cockpit_mid_turn(world, tmux, hold)
    tmux.keys("q")
    tmux.wait_for(lambda s: "Quit and cut it" in s, "the quit question")
    tmux.keys("Up", "Enter")  # from the highlighted hand-off up to "Quit and cut it"
    said = "cut notes-digest's turn at the last checkpoint; it resumes when a kernel next starts"
    tmux.wait_for(lambda s: said in " ".join(s.split()), "the cut to be said")
    assert read_discovery(world.home) is None, "cutting started a daemon"


def test_hz_on_an_empty_home_says_it_starts_the_daemon_before_the_screen_waits(
    tmux: Tmux, tmp_path: Path
) -> None:
    """Session 6 (new-user pass): ``hz --home EMPTY`` is never a blank terminal while the
    daemon starts. The test holds the startup lock, so the start waits for as long as the
    test looks: the line "starting the daemon for <home>…" is on the terminal meanwhile;
    let go, the cockpit opens on the daemon it started."""
    root = tmp_path / "empty"
    root.mkdir()
    env = daemon_env(root, HZ_NOW=homes.NOW)
    lock = os.open(root / START_LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        command = cockpit_command(env, exported=("HZ_", "PYDANTIC", "TERM"))
        tmux.start(f"env -u HZ_EMBEDDED {command}")
        tmux.wait_for(lambda s: f"starting the daemon for {root}…" in s, "the starting line")
        fcntl.flock(lock, fcntl.LOCK_UN)
        tmux.wait_for(lambda s: "hz demo" in s and "· started" in s, "the empty home")
    finally:
        os.close(lock)
        hz(env, "daemon", "stop")


def test_a_cockpit_in_the_terminals_background_says_so_instead_of_hanging_stopped(
    world: worlds.World, tmux: Tmux
) -> None:
    """Session 7 (attack pass): under plain ``timeout`` (its own process group, not the
    terminal's foreground) the cockpit was stopped by the terminal as it drew, and stayed
    stopped past the timeout. It now exits at once with ``HZU241`` and status 2; under
    ``timeout --foreground`` it opens as usual."""
    command = cockpit_command(env_of(world), "--embedded", exported=("HZ_", "PYDANTIC", "TERM"))
    tmux.start(f"timeout 600 env {command}; echo EXIT=$?; sleep 600")
    shown = tmux.wait_for(lambda s: "EXIT=" in s, "the cockpit to exit")
    assert "HZU241" in shown and "EXIT=2" in shown, shown
