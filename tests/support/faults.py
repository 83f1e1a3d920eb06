"""Heinzels made through the real ``hz``, and faults that make one of them fail for good."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.homes import World

#: Heinzels are made at this pinned moment; their hourly slot at 10:00 is due from then on.
MADE_AT = "2026-12-01T09:50:00Z"
SLOT_DUE_AT = "2026-12-01T10:00:30Z"


def hourly_digest(world: World, name: str) -> str:
    """An approved digest heinzel of the world's notes, drafting into ``<name>.md``; its id."""
    world.notes.joinpath("monday.md").touch()
    world.hz(
        "heinzel",
        "new",
        "--template",
        "digest",
        "--param",
        f"name={name}",
        "--param",
        f"notes={world.notes}",
        "--param",
        f"document={name}.md",
        "--param",
        f"section={name}",
        "--param",
        "schedule=0 * * * *",
        HZ_NOW=MADE_AT,
    )
    world.hz("approve", name, HZ_NOW=MADE_AT)
    return str(listed(world, HZ_NOW=MADE_AT)[name]["id"])


def turns_dir_is_a_file(world: World, heinzel_id: str) -> None:
    """The heinzel's ``turns`` folder replaced by a file: no turn of it can write its body."""
    turns = world.home / "heinzel" / heinzel_id / "turns"
    if turns.is_dir():
        for body in turns.iterdir():
            body.unlink()
        turns.rmdir()
    turns.write_text("not a folder\n")


def source_cache_is_a_file(world: World) -> Path:
    """The home's source cache replaced by a file: every tick that fetches fails as a whole."""
    cache = world.home / "heinzel" / "sources"
    if cache.is_dir():
        shutil.rmtree(cache)
    cache.write_text("not a folder\n")
    return cache


def listed(world: World, **env: str) -> dict[str, dict[str, Any]]:
    """``hz heinzel list --json`` by name."""
    result = world.hz("heinzel", "list", "--json", **env)
    return {item["name"]: item for item in json.loads(result.stdout)}


def eventually(check: Callable[[], object], what: str, timeout: float = 90.0) -> Any:
    """Poll until ``check`` returns something true (never asserts how soon: machines differ)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.2)
