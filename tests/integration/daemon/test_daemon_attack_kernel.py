"""Session 6 kernel attacks, met through the real ``hz`` binary and a real daemon process.

An index overwritten under a running daemon, FIFOs and directories in an
inbox, foreign bytes appended to a spine the daemon holds, and HTTP
requests that lack the protocol header or carry a bad field.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from pathlib import Path

import httpx
import orjson

from hz_kernel.daemon.protocol import DRAIN_PATH, HEALTH_PATH, PROTOCOL_HEADER, PROTOCOL_VERSION
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.kernel import Kernel
from hz_kernel.operations import INBOX, HeinzelRef
from tests.integration.daemon.daemon_helpers import Daemons, discovery, hz, ticks_pass
from tests.support.homes import World, digest_contract, make_world

WAIT_S = 60


def _spine(world: World, heinzel_id: str) -> list[dict[str, object]]:
    path = world.home / "heinzel" / heinzel_id / "session.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.endswith(b"}")]


def _until(check: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} within {WAIT_S}s")


async def _heinzel(world: World) -> str:
    """An approved heinzel that has drafted once."""
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    await kernel.wake(ref=made.id)
    await kernel.close()
    return made.id


async def test_s6_item2_a_fifo_or_directory_in_an_inbox_is_skipped_and_reported_everywhere(
    tmp_path: Path, daemons: Daemons
) -> None:
    """s6 attack 2: a FIFO and a directory named like requests in a heinzel's inbox: the next
    turn still takes the message sent after them, ``hz heinzel show`` and the page's inbox
    list (``heinzel.inbox``) work and name each skipped entry (HZS090), nothing is lost."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    inbox = world.home / "heinzel" / heinzel_id / "inbox"
    inbox.mkdir(exist_ok=True)
    os.mkfifo(inbox / "odd-fifo.json")
    (inbox / "odd-dir.json").mkdir()
    home = Home.resolve(world.home)
    daemons.start(home)
    sent = hz(world.home, "heinzel", "chat", "notes-digest", "mention the launch",
              "--request-id", "m1", "--json")  # fmt: skip
    assert sent.returncode == 0, sent.stderr

    def took_m1() -> bool:
        spine = _spine(world, heinzel_id)
        started = {
            str(e["turn"])
            for e in spine
            if e["kind"] == "turn.started" and "m1" in (e["data"].get("request_ids") or [])  # type: ignore[union-attr]
        }
        return any(e["kind"] == "turn.finished" and e["turn"] in started for e in spine)

    _until(took_m1, "no turn took m1")
    finished = [e for e in _spine(world, heinzel_id) if e["kind"] == "turn.finished"]
    assert finished[-1]["data"]["disposition"] != "failed"  # type: ignore[index]
    shown = hz(world.home, "heinzel", "show", "notes-digest")
    assert shown.returncode == 0, shown.stderr
    skipped = [line for line in shown.stdout.splitlines() if line.startswith("inbox: skipped:")]
    assert len(skipped) == 2 and all("HZS090" in line for line in skipped), shown.stdout
    assert "turns:" in shown.stdout
    detail = json.loads(hz(world.home, "heinzel", "show", "notes-digest", "--json").stdout)
    assert sorted(Path(s.split(": ")[1]).name for s in detail["inbox_skipped"]) == [
        "odd-dir.json",
        "odd-fifo.json",
    ]
    async with HttpClient(discovery(home)) as client:
        listed = await client.call(INBOX, HeinzelRef(ref="notes-digest"))
    assert {item.request_id: item.status for item in listed.items}["m1"] != "pending"
    assert len(listed.skipped) == 2
    assert (inbox / "m1.json").is_file() or (inbox / "delivered" / "m1.json").is_file()
    assert hz(world.home, "daemon", "stop").returncode == 0


async def test_s6_item3_foreign_bytes_appended_under_the_daemon_are_kept_aside_never_glued(
    tmp_path: Path, daemons: Daemons
) -> None:
    """s6 attack 3: a partial line another process appends to a spine the daemon holds is
    kept in a copy beside the spine and cut before the daemon's next line (recorded by a
    ``spine.repaired`` line and one coded HZS099 line in the daemon's log): the chain stays
    whole, verify passes, and the heinzel is not damaged."""
    world = make_world(tmp_path)
    heinzel_id = await _heinzel(world)
    home = Home.resolve(world.home)
    daemons.start(home)
    first = hz(world.home, "heinzel", "wake", "notes-digest")  # the daemon now holds the spine
    assert first.returncode == 0, first.stderr
    spine = world.home / "heinzel" / heinzel_id / "session.jsonl"
    _until(lambda: spine.read_bytes().endswith(b"\n") and _ended(world, heinzel_id, 2), "turn 2")
    foreign = b'{"v":1,"seq":99999,"kind":"turn.sta'
    end = spine.stat().st_size
    with spine.open("ab") as out:
        out.write(foreign)
    woke = hz(world.home, "heinzel", "wake", "notes-digest")
    assert woke.returncode == 0, woke.stderr
    _until(lambda: _ended(world, heinzel_id, 3), "no third turn ended")
    raw = spine.read_bytes()
    assert foreign not in raw and raw.endswith(b"\n")
    events = _spine(world, heinzel_id)
    (repaired,) = [e for e in events if e["kind"] == "spine.repaired"]
    assert repaired["data"] == {  # type: ignore[comparison-overlap]
        "offset": end,
        "dropped_bytes": len(foreign),
        "kept_copy": f"session.jsonl.torn-{end}",
    }
    assert (spine.parent / f"session.jsonl.torn-{end}").read_bytes() == foreign
    verified = hz(world.home, "heinzel", "verify", "notes-digest")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    listed = json.loads(hz(world.home, "heinzel", "list", "--json").stdout)
    assert [row["damaged"] for row in listed] == [False]
    log = (world.home / "daemon.log").read_text()
    assert log.count("HZS099: ") == 1 and "Traceback" not in log
    assert hz(world.home, "daemon", "stop").returncode == 0


def _ended(world: World, heinzel_id: str, count: int) -> bool:
    kinds = [e["kind"] for e in _spine(world, heinzel_id)]
    return sum(k in ("turn.finished", "turn.skipped") for k in kinds) >= count


async def test_s6_item4_a_request_without_the_protocol_header_is_told_so(
    shared_home: Home,
) -> None:
    """s6 attack 4: no ``x-hz-protocol`` header, on any route (an unknown one too), is answered
    by HZD136 naming the header, never "the client none; restart the daemon"."""
    found = discovery(shared_home)
    token = {"authorization": f"Bearer {found.token}"}
    async with httpx.AsyncClient(base_url=found.address, trust_env=False, timeout=10) as raw:
        for method, path in (("GET", HEALTH_PATH), ("POST", "/v1/nowhere"), ("GET", "/x")):
            refused = await raw.request(method, path, headers=token)
            assert refused.status_code == 400, path
            body = refused.json()
            assert body["code"] == "HZD136" and body["place"] == PROTOCOL_HEADER, body
            assert "restart" not in body["message"] and "no x-hz-protocol header" in body["message"]
        other = await raw.get(HEALTH_PATH, headers=token | {PROTOCOL_HEADER: "99"})
        assert other.json()["code"] == "HZD020"


async def test_s6_item4_a_bad_drain_request_names_its_field(shared_home: Home) -> None:
    """s6 attack 4: ``POST /v1/drain {"timeout_s": -5}`` is HZD010 with ``place: timeout_s``."""
    found = discovery(shared_home)
    headers = {"authorization": f"Bearer {found.token}", PROTOCOL_HEADER: str(PROTOCOL_VERSION)}
    async with httpx.AsyncClient(base_url=found.address, trust_env=False, timeout=10) as raw:
        refused = await raw.post(DRAIN_PATH, json={"timeout_s": -5}, headers=headers)
    assert refused.status_code == 422
    body = refused.json()
    assert body["code"] == "HZD010" and body["place"] == "timeout_s", body


def _overwrite_in_place(path: Path) -> None:
    """``head -c 65536 /dev/urandom > index.sqlite``: same inode, 64 KiB of noise."""
    with path.open("r+b") as out:
        out.truncate(0)
        out.write(random.Random(14).randbytes(65536))


def _whole(index: Path) -> bool:
    """The index file as a fresh connection sees it (no cached page can hide damage)."""
    try:
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as conn:
            return conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    except sqlite3.DatabaseError:
        return False


async def test_s6_item1_an_index_overwritten_under_the_daemon_heals_and_is_logged_once(
    tmp_path: Path, daemons: Daemons
) -> None:
    """s6 attack 1: the index overwritten with noise under a running daemon: the daemon
    rebuilds it from the spines itself (one HZD137 line), listing works again without a
    restart, the file on disk is whole, and no tick logs a traceback or repeats a line."""
    world = make_world(tmp_path)
    await _heinzel(world)
    home = Home.resolve(world.home)
    report = daemons.start(home, env={"HZ_TICK_SECONDS": "0.5"})
    index = world.home / "heinzel" / "index.sqlite"
    _overwrite_in_place(index)
    hz(world.home, "heinzel", "list")  # meets the damage (or not, as pages are cached)
    await ticks_pass(home, 3)
    listed = hz(world.home, "heinzel", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [row["name"] for row in json.loads(listed.stdout)] == ["notes-digest"]
    assert _whole(index)
    log = (world.home / "daemon.log").read_text()
    assert "Traceback" not in log
    assert log.count("HZD137: ") == 1 and log.count("HZS094") <= 1, log
    assert hz(world.home, "daemon", "status", "--json").returncode == 0
    assert report["pid"] == discovery(home).pid  # healed without a restart
    assert hz(world.home, "daemon", "stop").returncode == 0


async def test_s6_item1_reindex_beside_the_daemon_leaves_a_whole_index_on_disk(
    tmp_path: Path, daemons: Daemons
) -> None:
    """s6 attack 1: ``hz heinzel reindex`` right after the index was overwritten under the
    daemon judges the file itself, not the daemon's cached pages: after it, the file on disk
    is whole and listing works."""
    world = make_world(tmp_path)
    await _heinzel(world)
    home = Home.resolve(world.home)
    daemons.start(home, env={"HZ_TICK_SECONDS": "600"})
    assert hz(world.home, "heinzel", "reindex").returncode == 0  # the daemon's pages now cached
    index = world.home / "heinzel" / "index.sqlite"
    _overwrite_in_place(index)
    reindexed = hz(world.home, "heinzel", "reindex")
    assert reindexed.returncode == 0, reindexed.stderr
    assert _whole(index)
    listed = hz(world.home, "heinzel", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert hz(world.home, "daemon", "stop").returncode == 0
