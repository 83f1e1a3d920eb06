"""Issue 13 item 3: a feed that survives restarts.

Positions are durable (the index assigns them as lines are written), so a
reader that reconnects to a new daemon with its last position gets exactly
the events it missed, compared here against the spines themselves; only a
position of another index generation gets a reset.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from daemon_helpers import Daemons, discovery, hz, make_home, pid_alive

from hz_kernel.daemon.feed import FeedHub, FeedReset
from hz_kernel.daemon.protocol import FeedItem
from hz_kernel.home import Home
from hz_kernel.http_client import FeedLost, HttpClient
from hz_kernel.kernel import Kernel
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import StepDone
from tests.support.homes import digest_contract, make_world

NOW = "2026-12-01T09:00:00Z"
WAIT_S = 60


def spine_lines(home: Home) -> set[tuple[str, int]]:
    """(heinzel, seq) of every line of every spine of ``home``."""
    lines: set[tuple[str, int]] = set()
    for heinzel_id, path in home.spine_paths().items():
        for raw in Path(path).read_bytes().splitlines():
            lines.add((heinzel_id, orjson.loads(raw)["seq"]))
    return lines


def envelope(home: Home, heinzel_id: str, seq: int) -> dict[str, object]:
    raw = Path(home.spine_paths()[heinzel_id]).read_bytes().splitlines()[seq - 1]
    parsed: dict[str, object] = orjson.loads(raw)
    return parsed


async def read_until(
    items: AsyncIterator[FeedItem], into: list[FeedItem], done: set[tuple[str, int]]
) -> None:
    """Append every item to ``into`` until its events cover ``done``."""
    async for item in items:
        into.append(item)
        if done <= {(i.heinzel, i.event["seq"]) for i in into if i.event is not None}:
            return


def events(items: list[FeedItem]) -> list[FeedItem]:
    return [item for item in items if item.type == "event"]


async def test_a_reader_resumes_on_a_new_daemon_with_exactly_the_missed_events(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 item 3: SIGKILL the daemon, run turns without it, start another; the reader
    reconnects with its last position and gets the missed spine events, no gap, no duplicate,
    then live items."""
    monkeypatch.setenv("HZ_NOW", NOW)
    world = make_world(tmp_path)
    home = Home.resolve(world.home)
    kernel = await Kernel.open(home)
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    other = await kernel.create_heinzel("other")
    await kernel.close()
    env = {"HZ_NOW": NOW}

    first = daemons.start(home, env=env)
    before: list[FeedItem] = []
    async with HttpClient(discovery(home)) as client:
        reading = client.subscribe(after=0)
        await asyncio.wait_for(read_until(reading, before, spine_lines(home)), WAIT_S)
        woke = hz(world.home, "heinzel", "wake", "notes-digest", "--json", env=env)
        assert woke.returncode == 0, woke.stderr
        deadline = time.monotonic() + WAIT_S
        while not any(i.event and i.event["kind"] == "turn.finished" for i in before):
            assert time.monotonic() < deadline, "the daemon's turn never reached the feed"
            before.append(await asyncio.wait_for(anext(reading), WAIT_S))
        os.kill(first["pid"], signal.SIGKILL)
        with pytest.raises(FeedLost) as lost:
            while True:
                before.append(await asyncio.wait_for(anext(reading), WAIT_S))
        await reading.aclose()
        position, generation = client.feed_position, client.feed_generation
    assert lost.value.code == "HZD090" and lost.value.position == position
    assert position == before[-1].seq
    while pid_alive(first["pid"]):
        await asyncio.sleep(0.05)

    # Meanwhile, without a daemon: a turn by the embedded CLI, and a line another
    # process appends without indexing it (the next daemon's reconcile positions it).
    woke = hz(world.home, "heinzel", "wake", "notes-digest", "--json", env=env)
    assert woke.returncode == 0, woke.stderr
    with SpineWriter.open(home.heinzel_dir(other)) as writer:
        writer.append(StepDone(step="gather"))

    daemons.start(home, env=env)
    seen = {(i.heinzel, i.event["seq"]) for i in events(before) if i.event}
    missed = spine_lines(home) - seen
    assert len(missed) >= 4
    after: list[FeedItem] = []
    async with HttpClient(discovery(home)) as client:
        reading = client.subscribe(after=position, generation=generation)
        await asyncio.wait_for(read_until(reading, after, missed), WAIT_S)
        paused = hz(world.home, "heinzel", "pause", "other", env=env)
        assert paused.returncode == 0, paused.stderr
        live = await asyncio.wait_for(anext(reading), WAIT_S)
        await reading.aclose()
    assert live.type == "event" and live.event is not None
    assert (live.heinzel, live.event["kind"]) == (other, "heinzel.paused")

    replayed = events(after)
    everything = events(before) + replayed + [live]
    keys = [(i.heinzel, i.event["seq"]) for i in everything if i.event]
    assert len(keys) == len(set(keys)), "an event came twice"
    assert set(keys) == spine_lines(home), "an event never came"
    assert {(i.heinzel, i.event["seq"]) for i in replayed if i.event} == missed
    positions = [i.seq for i in everything]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    for item in everything:
        assert item.event == envelope(home, item.heinzel, item.event["seq"])
    assert "turn.finished" in [i.event["kind"] for i in replayed if i.event]
    assert (other, 2) in missed  # the line appended without the index


async def test_a_position_of_a_rebuilt_index_gets_a_reset_not_other_events(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 item 3: positions outlive a reindex; a deleted (new generation) index resets."""
    monkeypatch.setenv("HZ_NOW", NOW)
    world = make_world(tmp_path)
    home = Home.resolve(world.home)
    kernel = await Kernel.open(home)
    for name in ("a", "b", "c"):
        await kernel.create_heinzel(name)
    await kernel.close()
    env = {"HZ_NOW": NOW}
    daemons.start(home, env=env)
    async with HttpClient(discovery(home)) as client:
        health = await client.health()
    assert (health.edge, len(health.generation)) == (3, 26)
    for ref in ("a", "b"):
        assert hz(world.home, "heinzel", "pause", ref, env=env).returncode == 0
    reindexed = hz(world.home, "heinzel", "reindex", env=env)
    assert reindexed.returncode == 0, reindexed.stderr
    assert hz(world.home, "daemon", "stop", env=env).returncode == 0

    daemons.start(home, env=env)
    async with HttpClient(discovery(home)) as client:
        assert (await client.health()).generation == health.generation
        reading = client.subscribe(after=3, generation=health.generation)
        got = [await asyncio.wait_for(anext(reading), WAIT_S) for _ in range(2)]
        await reading.aclose()
    assert [(i.seq, i.event["kind"]) for i in got if i.event] == [
        (4, "heinzel.paused"),
        (5, "heinzel.paused"),
    ]
    assert hz(world.home, "daemon", "stop", env=env).returncode == 0

    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{home.index_path}{suffix}").unlink()
    daemons.start(home, env=env)
    async with HttpClient(discovery(home)) as client:
        rebuilt = await client.health()
        assert rebuilt.generation != health.generation and rebuilt.edge == 5
        with pytest.raises(FeedReset) as reset:
            await anext(client.subscribe(after=3, generation=health.generation))
    assert reset.value.code == "HZD050"
    assert reset.value.reset.reason == "other-generation"
    assert reset.value.reset.generation == rebuilt.generation


async def test_lines_another_process_writes_reach_a_live_reader(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 item 3: a spine the daemon does not hold, written by another process, still
    reaches its live readers, in position order."""
    monkeypatch.setenv("HZ_NOW", NOW)
    home = Home.resolve(make_world(tmp_path).home)
    kernel = await Kernel.open(home)
    heinzel = await kernel.create_heinzel("elsewhere")
    await kernel.close()
    daemons.start(home, env={"HZ_NOW": NOW})
    async with HttpClient(discovery(home)) as client:
        health = await client.health()
        edge = health.edge
        reading = client.subscribe(after=edge, generation=health.generation)
        first = asyncio.ensure_future(anext(reading))
        kernel = await Kernel.open(home)
        try:
            await kernel.append(heinzel, StepDone(step="gather"))
            await kernel.append(heinzel, StepDone(step="think"))
        finally:
            await kernel.close()
        got = [await asyncio.wait_for(first, WAIT_S)]
        got.append(await asyncio.wait_for(anext(reading), WAIT_S))
        await reading.aclose()
    assert [(i.seq, i.event["seq"]) for i in got if i.event] == [(edge + 1, 2), (edge + 2, 3)]


async def test_a_feed_asked_for_while_the_daemon_stops_ends_at_once(home: Home) -> None:
    """Issue 13 items 3/4: a reader that subscribes after the hub closed for a stop (a cockpit
    re-attaching to the old daemon in the moment before it exits) gets an ended feed, not one
    that hangs until the server's graceful timeout cancels it with a traceback in the log."""
    kernel = await Kernel.open(home)
    hub = FeedHub.of(kernel)
    try:
        hub.close()
        late = hub.subscribe(after=None)
        assert late.finished and hub.subscribers == 0
        replaying = hub.subscribe(after=0)
        assert replaying.closed and hub.subscribers == 0
    finally:
        await kernel.close()


def append_unindexed(home: Home, count: int) -> list[tuple[str, int]]:
    """``count`` lines spread over the home's spines, written with no daemon and no index
    (what a restarted daemon's readers have missed)."""
    paths = sorted(Path(p) for p in home.spine_paths().values())
    writers = [SpineWriter.open(path.parent) for path in paths]
    written: list[tuple[str, int]] = []
    try:
        for n in range(count):
            writer = writers[n % len(writers)]
            written.append((writer.path.parent.name, writer.append(StepDone(step="think")).seq))
    finally:
        for writer in writers:
            writer.close()
    return written


async def test_readers_replaying_the_same_range_read_each_spine_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 item 3 (bench `reconnect_caught_up_ms`): after a restart every reader comes
    back from the same position; ten of them replaying 600 events over 5 spines get exactly
    those events while the spines are read once between them, not once per reader and page."""
    monkeypatch.setenv("HZ_NOW", NOW)
    home = make_home(tmp_path / "home", heinzels=5)
    await (await Kernel.open(home)).close()  # positions 1-5: the five spines' first lines
    written = append_unindexed(home, 600)
    kernel = await Kernel.open(home)
    try:
        hub = FeedHub.of(kernel)
        assert hub.edge == 605
        readers = [hub.subscribe(after=5, generation=hub.generation) for _ in range(10)]
        for reader in readers:
            entries = [entry for page in iter(reader.replay_page, []) for entry in page]
            assert [entry.seq for entry in entries] == list(range(6, 606))
            keys = [(e.item.heinzel, e.item.event["seq"]) for e in entries if e.item.event]
            assert len(keys) == len(set(keys)) and set(keys) == set(written)
            reader.close()
        assert hub.rows.spine_reads == 5
        for entry in entries:
            assert entry.item.event == envelope(home, entry.item.heinzel, entry.item.event["seq"])
    finally:
        await kernel.close()


async def test_readers_from_different_positions_each_get_exactly_their_missed_events(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 item 3: readers that come back to a new daemon from different positions,
    at once, share what the daemon reads for them, yet each gets exactly the events after
    its own position, in order, as the spines hold them."""
    monkeypatch.setenv("HZ_NOW", NOW)
    env = {"HZ_NOW": NOW}
    home = make_home(tmp_path / "home", heinzels=5)
    daemons.start(home, env=env)
    async with HttpClient(discovery(home)) as client:
        before = await client.health()
    assert hz(home.root, "daemon", "stop", env=env).returncode == 0
    written = append_unindexed(home, 600)

    daemons.start(home, env=env)
    async with HttpClient(discovery(home)) as client:
        health = await client.health()
    assert (health.generation, health.edge) == (before.generation, before.edge + 600)

    async def resume(after: int) -> list[FeedItem]:
        got: list[FeedItem] = []
        async with HttpClient(discovery(home)) as reader:
            async for item in reader.subscribe(after=after, generation=before.generation):
                got.append(item)
                if item.seq >= health.edge:
                    return got
        return got

    starts = [before.edge, before.edge + 100, before.edge + 550, before.edge]
    resumed = await asyncio.wait_for(asyncio.gather(*(resume(s) for s in starts)), WAIT_S)
    everything = [(item.heinzel, item.event["seq"]) for item in resumed[0] if item.event]
    assert len(everything) == len(set(everything)) and set(everything) == set(written)
    for start, got in zip(starts, resumed, strict=True):
        assert [item.seq for item in got] == list(range(start + 1, health.edge + 1))
        keys = [(item.heinzel, item.event["seq"]) for item in got if item.event]
        assert keys == everything[start - before.edge :]
        for item in got:
            assert item.event == envelope(home, item.heinzel, item.event["seq"])
