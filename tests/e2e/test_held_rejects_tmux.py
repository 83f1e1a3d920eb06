"""Attack on issue 14, point 1: a held rejection belongs to the cockpit that holds it.

Cockpit A (the real ``hz`` in tmux, on a daemon) rejects a draft on the
review desk: held for undo in ``<home>/cockpit/held-rejects.json``. Cockpit
B starts on the same home while A runs. B must leave A's rejection alone
(A's undo window is open), and A's ``u`` must then really restore the draft.
"""

from __future__ import annotations

import time
from pathlib import Path

from hz_kernel.connect import connect
from hz_tui.app import CockpitApp
from hz_tui.held_rejects import HeldRejects
from tests.support.env import hz_env
from tests.support.tmux import HZ, WAIT_S, Tmux, hz
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE


async def test_attack1_a_second_cockpit_never_sends_a_rejection_a_running_cockpit_holds(
    tmp_path: Path, tmux: Tmux
) -> None:
    world = await worlds.build(tmp_path, names=("notes-digest",))
    document = world.document("notes-digest")
    settings = world.home.settings_path
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
        tmux.wait_for(lambda s: "notes-digest" in s, "cockpit A's home table")
        tmux.keys("F4")
        tmux.wait_for(lambda s: "draft 1 of 1" in s, "cockpit A's review desk")
        tmux.keys("x")
        tmux.wait_for(lambda s: "1 rejected: u undoes" in s, "cockpit A's held rejection")
        assert [h.name for h in HeldRejects(world.home).load()] == ["notes-digest"]

        # Cockpit B on the same home, up to the point where it sends what was left behind.
        client = await connect(world.home)
        try:
            app = CockpitApp(world.home, client)
            async with app.run_test(size=SIZE) as pilot:
                await app.loaded.wait()
                await app.warmed.wait()
                await pilot.pause(0.5)  # the home settles before B closes (a loaded machine)
        finally:
            await client.close()
        assert worlds.TAG in document.read_text(), "cockpit B sent cockpit A's rejection"
        assert [h.name for h in HeldRejects(world.home).load()] == ["notes-digest"]

        tmux.keys("u")
        tmux.wait_for(lambda s: "reject undone" in s, "cockpit A's undo")
        tmux.wait_for(lambda s: "draft 1 of 1" in s, "the draft back in A's queue")
        listed = hz(env, "drafts", "--json")
        assert listed.returncode == 0 and "notes-digest" in listed.stdout, listed.stdout
        tmux.keys("Escape", "q")
        deadline = time.monotonic() + WAIT_S
        while tmux.run("list-sessions") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not tmux.run("list-sessions"), "cockpit A did not exit on q"
        assert worlds.TAG in document.read_text(), "the undone rejection was sent after all"
    finally:
        stopped = hz(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr


async def test_attack7_quitting_with_the_daemon_down_says_the_held_rejection_waits(
    tmp_path: Path, tmux: Tmux
) -> None:
    """One stderr line after the cockpit exits (HZU246); the next cockpit sends the rejection."""
    world = await worlds.build(tmp_path, names=("notes-digest",))
    document = world.document("notes-digest")
    settings = world.home.settings_path
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
        knobs = [f"{k}={v}" for k, v in env.items() if k.startswith(("HZ_", "PYDANTIC"))]
        # The shell stays after hz exits, so the terminal still shows what hz said last.
        command = " ".join([*knobs, str(HZ), "; echo hz-exited; sleep 600"])
        tmux.run("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "40", command)
        tmux.wait_for(lambda s: "notes-digest" in s, "the home table")
        tmux.keys("F4")
        tmux.wait_for(lambda s: "draft 1 of 1" in s, "the review desk")
        tmux.keys("x")
        tmux.wait_for(lambda s: "1 rejected: u undoes" in s, "the held rejection")
    finally:
        stopped = hz(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr
    tmux.keys("C-q")
    shown = tmux.wait_for(lambda s: "hz-exited" in s, "the cockpit's exit")
    said = [line for line in shown.splitlines() if "HZU" in line]
    assert said == [
        "HZU246: 1 rejection waits (the kernel could not be reached) "
        "and will be sent by the next cockpit on this home"
    ], shown
    assert [h.name for h in HeldRejects(world.home).load()] == ["notes-digest"]
    assert worlds.TAG in document.read_text()

    # The next cockpit (embedded here) sends it: its holder has ended.
    client = await connect(world.home)
    try:
        app = CockpitApp(world.home, client)
        async with app.run_test(size=SIZE):
            await app.loaded.wait()
            await app.warmed.wait()
    finally:
        await client.close()
    assert HeldRejects(world.home).load() == []
    assert worlds.TAG not in document.read_text()
