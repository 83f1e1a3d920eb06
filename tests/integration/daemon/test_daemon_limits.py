"""Issue 13 item 2: limits that limit. A daemon with ``max_concurrent_turns = 1`` runs five
woken turns one at a time, says so on ``/v1/health`` and ``hz daemon status``, and journals
why the others waited.

Real processes: the daemon and the CLI, the offline local model held by ``HZ_MODEL_HOLD_FILE``
until every wake has been admitted, so the full queue is a state the test waits for, not a
moment it hopes to catch. The daemon runs on the real
clock (the spines' timestamps must move to show order); nothing depends on the date.
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from daemon_helpers import Daemons, discovery, hz, one_coded_line

from hz_kernel.contracts import render_template
from hz_kernel.daemon.protocol import HEALTH_PATH, PROTOCOL_HEADER, PROTOCOL_VERSION
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import HZ, World, make_world

HEINZELS = 5
WAIT_S = 240


async def _five_heinzels(world: World) -> dict[str, str]:
    """Five approved digests, each of its own document, that have drafted once (so the
    daemon's tick finds nothing new to wake them for); name -> id."""
    kernel = await Kernel.open(Home.resolve(world.home))
    made: dict[str, str] = {}
    try:
        for n in range(HEINZELS):
            name = f"d{n}"
            text = render_template(
                "digest",
                {"name": name, "notes": "notes", "document": f"reports/{name}.md",
                 "section": name, "schedule": "", "model": "local"},
            )  # fmt: skip
            new = await kernel.new(text=text)
            await kernel.approve(ref=new.id)
            await kernel.wake(ref=new.id)
            made[name] = new.id
    finally:
        await kernel.close()
    return made


def _health(world: World) -> dict[str, Any]:
    found = discovery(Home.resolve(world.home))
    response = httpx.get(
        found.address + HEALTH_PATH,
        headers={
            "authorization": f"Bearer {found.token}",
            PROTOCOL_HEADER: str(PROTOCOL_VERSION),
        },
        timeout=30,
    )
    response.raise_for_status()
    return dict(response.json())


def _status(world: World) -> dict[str, Any]:
    result = hz(world.home, "daemon", "status", "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def _limited_turns(world: World, heinzel_id: str) -> list[dict[str, Any]]:
    """The events of the turn this test's wake (request id ``limit-*``) ran."""
    spine = world.spine(heinzel_id)
    ours = {
        e["turn"]
        for e in spine
        if e["kind"] == "turn.started"
        and any(str(r).startswith("limit-") for r in e["data"]["request_ids"])  # type: ignore[index]
    }
    return [e for e in spine if e["turn"] in ours]  # type: ignore[misc]


async def test_issue13_item2_one_turn_at_a_time_with_four_queued_and_said_so(
    tmp_path: Path, daemons: Daemons
) -> None:
    """Issue 13 item 2: with ``max_concurrent_turns = 1`` five wakes never run two turns at
    once (the spines' turn.started..turn.finished intervals do not overlap), all five finish,
    and while they run every sample of ``/v1/health`` and ``hz daemon status --json`` says at
    most 1 running, and one says 1 running / 4 queued, with each waiter's reason."""
    world = make_world(tmp_path)
    with (world.home / "hz.toml").open("a") as toml:
        toml.write("[daemon]\nmax_concurrent_turns = 1\nmin_free_memory_mb = 0\n")
    ids = await _five_heinzels(world)
    hold = tmp_path / "hold"
    hold.touch()
    daemons.start(Home.resolve(world.home), env={"HZ_MODEL_HOLD_FILE": str(hold)})

    wakes = [
        subprocess.Popen(
            [*HZ, "heinzel", "wake", name, "--request-id", f"limit-{name}", "--json"],
            env=world.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ids
    ]
    for wake in wakes:
        _, err = wake.communicate(timeout=120)
        assert wake.returncode == 0, err

    samples: list[tuple[str, dict[str, Any]]] = []
    deadline = time.monotonic() + WAIT_S
    while not samples or samples[-1][1]["turns_queued"] < HEINZELS - 1:
        assert time.monotonic() < deadline, f"the wakes were not all admitted: {samples[-1:]}"
        samples.append(("health", _health(world)))
        time.sleep(0.1)
    samples.append(("status", _status(world)))
    hold.unlink()
    while not all(
        any(e["kind"] == "turn.finished" for e in _limited_turns(world, i)) for i in ids.values()
    ):
        assert time.monotonic() < deadline, "the five turns did not all finish"
        samples.append(("health", _health(world)))
        time.sleep(0.1)
    samples.append(("status", _status(world)))

    for source, sample in samples:
        assert sample["turns_running"] <= 1, (source, sample)
        assert sample["max_concurrent_turns"] == 1 and sample["memory_floor_mb"] == 0
        assert sample["memory_available_mb"] > 0
    full = [s for source, s in samples if source == "status" and s["turns_queued"] == 4]
    assert full, [(source, s["turns_running"], s["turns_queued"]) for source, s in samples]
    assert full[0]["turns_running"] == 1
    listed = full[0]["turns"]
    assert [t["queued"] for t in listed] == [None, "capacity", "capacity", "capacity", "capacity"]
    assert listed[0]["step"] in ("gather", "think", "outcome", "act", "finish")
    assert {t["name"] for t in listed} == set(ids)
    assert max(s["turns_queued"] for source, s in samples if source == "health") >= 3
    assert samples[-1][1]["turns_running"] == 0 and samples[-1][1]["turns_queued"] == 0
    plain = hz(world.home, "daemon", "status")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[1].startswith("turns 0 running, 0 queued (max 1)  attempts 0")
    assert "(floor 0 MB)" in plain.stdout

    intervals = []
    queued = []
    for heinzel_id in ids.values():
        events = _limited_turns(world, heinzel_id)
        kinds = [e["kind"] for e in events]
        assert kinds.count("turn.started") == 1 and kinds.count("turn.finished") == 1, kinds
        finished = next(e for e in events if e["kind"] == "turn.finished")
        assert finished["data"]["disposition"] in ("drafted", "nothing"), finished
        started = next(e for e in events if e["kind"] == "turn.started")
        intervals.append((started["ts"], finished["ts"]))
        waited = [e for e in events if e["kind"] == "turn.queued"]
        if waited:
            assert kinds.index("turn.queued") < kinds.index("turn.started")
            assert waited[0]["data"] == {"reason": "capacity", "keys": started["data"]["keys"]}
        queued.extend(waited)
    intervals.sort()
    for (_, before_end), (after_start, _) in itertools.pairwise(intervals):
        assert before_end <= after_start, intervals
    assert len(queued) == 4


def test_issue13_item2_a_limit_out_of_bounds_is_one_coded_line(tmp_path: Path) -> None:
    """Issue 13 item 2: limits are validated at start; a bad one names its key, no traceback."""
    world = make_world(tmp_path)
    with (world.home / "hz.toml").open("a") as toml:
        toml.write("[daemon]\nmax_concurrent_attempts = 0\n")
    result = hz(world.home, "daemon", "start", "--foreground")
    line = one_coded_line(result, "HZS062")
    assert "daemon.max_concurrent_attempts" in line
    assert result.returncode == 1


async def test_fix13_wake_says_whether_its_turn_started_waits_or_queues_behind(
    tmp_path: Path, daemons: Daemons
) -> None:
    """New-user pass (issue 13) finding 2: ``wake`` on a daemon says the truth. With
    ``max_concurrent_turns = 1``: the first wake ``started`` (its turn named), a wake of
    another heinzel waits for ``capacity`` (the turn that journalled ``turn.queued``), and a
    second wake of the first heinzel is ``requested`` behind its running turn; in text too."""
    world = make_world(tmp_path)
    with (world.home / "hz.toml").open("a") as toml:
        toml.write("[daemon]\nmax_concurrent_turns = 1\nmin_free_memory_mb = 0\n")
    ids = await _five_heinzels(world)
    hold = tmp_path / "hold"
    hold.touch()
    daemons.start(Home.resolve(world.home), env={"HZ_MODEL_HOLD_FILE": str(hold)})

    def wake(name: str, *extra: str) -> str:
        result = hz(world.home, "heinzel", "wake", name, *extra)
        assert result.returncode == 0, result.stderr
        return result.stdout

    started = json.loads(wake("d0", "--json"))
    assert started["status"] == "started" and started["turn"], started
    waiting = json.loads(wake("d1", "--json"))
    assert (waiting["status"], waiting["reason"]) == ("waiting", "capacity"), waiting
    queued = [e for e in world.spine(ids["d1"]) if e["kind"] == "turn.queued"]
    assert [e["turn"] for e in queued] == [waiting["turn"]]
    behind = json.loads(wake("d0", "--json"))
    assert (behind["status"], behind["turn"]) == ("requested", started["turn"]), behind

    text = wake("d2")
    assert text.startswith("d2: queued (capacity): turn "), text
    assert text.endswith(" starts when a turn slot frees\n"), text
    assert wake("d0") == (
        f"d0: queued behind the running turn {started['turn']}; the turn after it takes the wake\n"
    )
    hold.unlink()


async def test_fix13_turns_a_crash_cut_list_as_interrupted_not_running(
    tmp_path: Path, daemons: Daemons
) -> None:
    """New-user pass (issue 13) finding 3: after a kill -9 and a new daemon, the cockpit showed
    three turns running with ``max_concurrent_turns = 1``. A turn open in its spine that the
    daemon does not run (it has not resumed it yet) lists ``interrupted``: the rows running
    are as many as ``/v1/health`` says."""
    world = make_world(tmp_path)
    with (world.home / "hz.toml").open("a") as toml:
        toml.write("[daemon]\nmax_concurrent_turns = 1\nmin_free_memory_mb = 0\n")
    ids = await _five_heinzels(world)
    cut = ["d0", "d1", "d2"]
    for name in cut:
        crashed = subprocess.run(
            [*HZ, "heinzel", "wake", name, "--request-id", f"cut-{name}"],
            env=world.env(HZ_CRASH_AT="step.done:gather"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    hold = tmp_path / "hold"
    hold.touch()
    daemons.start(Home.resolve(world.home), env={"HZ_MODEL_HOLD_FILE": str(hold)})
    deadline = time.monotonic() + WAIT_S
    while _health(world)["turns_running"] < 1:
        assert time.monotonic() < deadline, "the daemon resumed no turn"
        time.sleep(0.1)

    listed = hz(world.home, "heinzel", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    awake = {row["name"]: row for row in json.loads(listed.stdout) if row["state"] == "awake"}
    assert set(awake) == set(cut), awake
    running = [name for name, row in awake.items() if not (row["queued"] or row["interrupted"])]
    assert len(running) == 1, awake
    assert _health(world)["turns_running"] == 1
    assert set(ids) >= set(awake)
    text = hz(world.home, "heinzel", "list").stdout
    cut_rows = [line for line in text.splitlines() if "awake (interrupted)" in line]
    assert len(cut_rows) == sum(1 for row in awake.values() if row["interrupted"]), text
    hold.unlink()
