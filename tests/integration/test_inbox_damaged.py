"""Damaged files in a heinzel's inbox are named, never silently passed over nor run.

An inbox entry is written atomically under its request id, so one that is
empty, not JSON, or holds a request under another id was damaged after it
was admitted. Each is skipped and named with a coded line (``HZS031``) where
the inbox is shown; a request under another id is not run, since no turn
could ever mark its file delivered. The message sent after them is taken as
usual.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import World, digest_contract, make_world

NOW = "2026-12-02T09:00:00Z"


async def _heinzel(world: World) -> str:
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    await kernel.close()
    return made.id


async def test_damaged_inbox_entries_are_named_and_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_NOW", NOW)
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    inbox = world.home / "heinzel" / heinzel_id / "inbox"
    inbox.mkdir(exist_ok=True)
    (inbox / "empty.json").write_bytes(b"")
    (inbox / "garbage.json").write_bytes(b"\xa5not json at all")
    other = {"request_id": "elsewhere", "heinzel": heinzel_id, "kind": "wake"}
    (inbox / "moved.json").write_bytes(orjson.dumps(other))
    sent = world.hz("heinzel", "chat", "notes-digest", "mention the launch",
                    "--request-id", "m1", HZ_NOW=NOW)  # fmt: skip
    assert "Traceback" not in sent.stderr
    spine = world.spine(heinzel_id)
    keys = [str(e["key"]) for e in spine if e["kind"] == "turn.started"]
    assert f"{heinzel_id}@m1" in keys
    assert f"{heinzel_id}@elsewhere" not in keys
    shown = world.hz("heinzel", "show", "notes-digest", "--json", HZ_NOW=NOW)
    skipped = json.loads(shown.stdout)["inbox_skipped"]
    assert sorted(Path(line.split(": ")[1]).name for line in skipped) == [
        "empty.json",
        "garbage.json",
        "moved.json",
    ]
    assert all(line.startswith("HZS031: ") for line in skipped), skipped
    assert (inbox / "moved.json").is_file(), "a damaged entry is left where it is"
