"""Issue 13 item 5: the real ``hz --connect`` cockpit in tmux steers and approves through a forward.

A daemon serves home A. A TCP forward (what ``ssh -L`` does) listens on a
port of its own, so every request names the forward's port in ``Host``.
The cockpit runs in tmux with ``HZ_HOME`` pointing at an empty directory
with mode 000 (and, when the test runs as root, as the user ``nobody``, so
the mode binds). It lists the heinzels, opens one, wakes it, steers the
running turn from the composer in STEER mode, then approves the draft from
the review queue. What happened is read back from home A's spine.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import orjson

from hz_kernel.daemon.protocol import Discovery
from hz_kernel.kernel import Kernel
from tests.support.forward import PortForward
from tests.support.tmux import Tmux, daemon_env, hz, remote_cockpit_command
from tests.tui import worlds

NOBODY = 65534


async def long_digest(root: Path) -> worlds.World:
    """Home A: one digest heinzel, woken once (a draft waits), over notes long enough to steer."""
    world = worlds.make_world(root)
    world.add_note("wednesday.md", "# Wednesday\n" + "".join(f"- item {n}\n" for n in range(30)))
    kernel = await Kernel.open(world.home)
    try:
        await worlds.add_heinzel(kernel, world, "notes-digest")
    finally:
        await kernel.close()
    return world


def spine_events(world: worlds.World) -> list[dict[str, object]]:
    (spine,) = (world.home.root / "heinzel").glob("hz-*/session.jsonl")
    return [orjson.loads(line) for line in spine.read_bytes().splitlines() if line]


def as_nobody(paths: list[Path]) -> list[str]:
    """A command prefix that drops root to ``nobody`` (owning ``paths``); none when not root."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return []
    for path in paths:
        os.chown(path, NOBODY, NOBODY)
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]


def test_remote_cockpit_steers_and_approves_through_a_port_forward(
    tmp_path: Path, tmux: Tmux
) -> None:
    """Issue 13 item 5: with no access to ``$HZ_HOME`` the cockpit steers mid-turn and approves."""
    world = asyncio.run(long_digest(tmp_path / "a"))
    env = daemon_env(world.home.root, HZ_MODEL_DELAY_MS="400")
    started = hz(env, "daemon", "start")
    assert started.returncode == 0, started.stderr
    found = Discovery.model_validate_json(world.home.discovery_path.read_bytes())
    forward = PortForward(int(found.address.rsplit(":", 1)[1]))
    # Not under tmp_path: its 0700 parents would keep ``nobody`` out of everything.
    laptop = Path(tempfile.mkdtemp(prefix="hz-laptop-"))
    empty, state, token = laptop / "empty-home", laptop / "state", laptop / "token"
    for folder in (empty, state):
        folder.mkdir(mode=0o700)
    token.write_text(found.token + "\n")
    token.chmod(0o600)
    prefix = as_nobody([laptop, state, token])
    empty.chmod(0o000)
    try:
        laptop_env = {
            "HZ_HOME": str(empty),
            "XDG_STATE_HOME": str(state),
            "HOME": str(laptop),
            "PYDANTIC_AI_NO_BANNER": "1",
            "TERM": "xterm-256color",
        }
        url = f"http://127.0.0.1:{forward.port}"
        tmux.start(remote_cockpit_command(laptop_env, url, token, prefix=prefix))
        shown = tmux.wait_for(lambda s: "notes-digest" in s, "the home table")
        assert "remote daemon" in shown
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "Live turn" in s, "the heinzel page")
        tmux.keys("w")
        tmux.wait_for(lambda s: "● think" in s and "### Notes" in s, "the turn thinking")
        tmux.keys("i")
        tmux.type_text("name the owners")
        tmux.keys("C-t", "Enter")
        tmux.wait_for(lambda s: "✓ finish" in s, "the turn's end")
        kinds = [e["kind"] for e in spine_events(world)]
        assert kinds.count("turn.steered") == 1, "the steer reached the running turn once"
        assert kinds[-1] == "turn.finished" and "turn.steered" in kinds[kinds.index("step.done") :]
        tmux.keys("Escape", "Escape", "F4")
        tmux.wait_for(lambda s: "draft 1 of 1" in s, "the review queue")
        tmux.keys("a")
        tmux.wait_for(lambda s: "notes-digest: draft approved" in s, "the approval")
        approved = [e for e in spine_events(world) if e["kind"] == "approval.observed"]
        assert approved, "the draft was approved on home A"
        assert worlds.TAG not in world.document("notes-digest").read_text()
        assert os.listdir(state), "the cockpit kept its own files under the state dir"
    finally:
        empty.chmod(0o700)
        entries = os.listdir(empty)
        shutil.rmtree(laptop)
        forward.close()
        stopped = hz(env, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stderr
    assert entries == []
