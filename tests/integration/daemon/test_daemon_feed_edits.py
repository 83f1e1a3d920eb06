"""Feed defects found by an attacker: spines edited by hand under the feed's index.

The index says where each positioned line is; a hand edit moves the lines
(a byte inserted early) or removes them (a spine cut short). The feed must
still answer exactly the right lines or a ``spine-changed`` reset, and never
stall the daemon finding out.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import orjson
import pytest
from daemon_helpers import Daemons, discovery, hz, make_home

from hz_kernel.daemon.feed import FeedReset
from hz_kernel.daemon.protocol import FeedItem
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import StepDone

NOW = "2026-12-01T09:00:00Z"
WAIT_S = 60


def spine_envelopes(home: Home) -> dict[tuple[str, int], dict[str, object]]:
    """Every line of every spine of ``home``, parsed, by (heinzel, seq)."""
    found: dict[tuple[str, int], dict[str, object]] = {}
    for heinzel_id, path in home.spine_paths().items():
        for raw in Path(path).read_bytes().splitlines():
            envelope = orjson.loads(raw)
            found[(heinzel_id, envelope["seq"])] = envelope
    return found


def grow(home: Home, lines: int) -> Path:
    """Append ``lines`` events to the home's first spine; its path."""
    path = Path(sorted(home.spine_paths().values())[0])
    with SpineWriter.open(path.parent) as writer:
        for _ in range(lines):
            writer.append(StepDone(step="think"))
    return path


async def replay_all(client: HttpClient, generation: str, edge: int) -> list[FeedItem] | FeedReset:
    """Every item from position 0 up to ``edge``, or the reset the daemon answered."""
    items: list[FeedItem] = []
    reading = client.subscribe(after=0, generation=generation)
    try:
        async for item in reading:
            items.append(item)
            if item.seq >= edge:
                return items
    except FeedReset as reset:
        return reset
    finally:
        await reading.aclose()
    return items


async def test_a_byte_inserted_early_in_a_spine_neither_stalls_the_daemon_nor_garbles_replay(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 feed defects item 2: with a byte inserted early in a long spine while the
    daemon was stopped, every stored offset after it is stale. A replay from 0 ends with
    exactly the spines' lines (or a spine-changed reset), and /v1/health answers while it
    runs: the lines are found in one pass off the event loop, not one whole-file re-read per
    line on it."""
    monkeypatch.setenv("HZ_NOW", NOW)
    env = {"HZ_NOW": NOW}
    home = make_home(tmp_path / "home", heinzels=2)
    path = grow(home, 6000)
    daemons.start(home, env=env)
    stopped = hz(home.root, "daemon", "stop", env=env)
    assert stopped.returncode == 0, stopped.stderr
    data = path.read_bytes()
    second = data.index(b"\n") + 1
    path.write_bytes(data[: second + 1] + b" " + data[second + 1 :])

    daemons.start(home, env=env)
    async with HttpClient(discovery(home)) as client, HttpClient(discovery(home)) as prober:
        health = await client.health()
        replay = asyncio.create_task(replay_all(client, health.generation, health.edge))
        answered = 0
        while not replay.done():
            await asyncio.wait_for(prober.health(), 5)
            answered += 1
        outcome = await asyncio.wait_for(replay, WAIT_S)
    assert answered >= 1
    if isinstance(outcome, FeedReset):
        assert outcome.reset.reason == "spine-changed"
        return
    expected = spine_envelopes(home)
    got = {(i.heinzel, i.event["seq"]): i.event for i in outcome if i.event is not None}
    assert len(got) == len([i for i in outcome if i.event is not None]), "an event came twice"
    assert got == expected
    assert os.path.getsize(path) == len(data) + 1


async def test_lines_cut_from_a_spine_while_the_daemon_runs_are_not_replayed_from_cache(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 feed defects item 3: a replay caches what it read; cut the last spine short
    while the daemon runs and a replay from 0 must not hand out the removed lines from that
    cache: the spine file changed, so its entries go and the replay ends with a reset."""
    monkeypatch.setenv("HZ_NOW", NOW)
    env = {"HZ_NOW": NOW}
    home = make_home(tmp_path / "home", heinzels=2)
    path = grow(home, 40)
    daemons.start(home, env=env)
    async with HttpClient(discovery(home)) as client:
        health = await client.health()
        first = await asyncio.wait_for(replay_all(client, health.generation, health.edge), WAIT_S)
        assert isinstance(first, list)
        kept = b"".join(path.read_bytes().splitlines(keepends=True)[:-10])
        path.write_bytes(kept)
        again = await asyncio.wait_for(replay_all(client, health.generation, health.edge), WAIT_S)
    present = set(spine_envelopes(home))
    if isinstance(again, list):
        replayed = {(i.heinzel, i.event["seq"]) for i in again if i.event is not None}
        assert replayed <= present, "lines cut from the spine came back from the cache"
    assert isinstance(again, FeedReset)
