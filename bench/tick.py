"""Tick benchmark: an idle tick over 500 asleep heinzels, and 200 heinzels over 20 shared inputs.

Run: ``python bench/tick.py`` (``--tiny`` for the smoke test's run; each
size is an option too). The last line is one JSON object of named figures,
named after the full sizes.
Targets (issue 6): an idle tick over 500 asleep heinzels costs one index
query, opens no spine and takes ≤ 5 ms (shown beside a bare SQLite query on
the same index); 200 heinzels watching 20 inputs cost 20 fetches a tick.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import emit, median_ms, run, sizes, write_spine_fast
from ulid import ULID

from hz_kernel.adapters.sources import SourceRequest, default_registry
from hz_kernel.commands.tick import TickCommands
from hz_kernel.contracts import InputSpec, compile_contract
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.tick.cache import SourceCache
from hz_kernel.tick.schedule import latest_slot, slot_key
from hz_kernel.vocabulary import (
    ContractApproved,
    EventData,
    HeinzelCreated,
    StepDone,
    TurnFinished,
    TurnStarted,
)

TickKernel: type[Kernel] = (
    Kernel if issubclass(Kernel, TickCommands) else type("TickKernel", (TickCommands, Kernel), {})
)
SCHEDULE = "0 9 * * *"

_opened_spines: list[str] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    """Count every open of a spine file, whoever opens it."""
    if event in ("open", "os.open") and str(args[0]).endswith("session.jsonl"):
        _opened_spines.append(str(args[0]))


def _contract(name: str) -> str:
    hz = {
        "schedule": SCHEDULE,
        "render_on_schedule": "if-moved",
        "inputs": {"notes": {"source": "files", "method": "glob", "args": {"pattern": "*.md"}}},
        "requires": ["documents:write", "files:read"],
        "publishes": [{"capability": "documents.place_draft", "asset": f"doc:{name}.md#{name}"}],
        "outputs": {name: {}},
    }
    return f"---\nname: {name}\nhz: {json.dumps(hz)}\n---\n# {name}\n\n### Goal\n\nKeep it.\n"


def _notes(root: Path, count: int) -> list[dict[str, object]]:
    """``count`` folders of notes and the input spec of each (polled hourly)."""
    specs = []
    for n in range(count):
        folder = root / f"notes-{n:02d}"
        folder.mkdir(parents=True)
        (folder / "week.md").write_text(f"# Week\n- item {n}\n")
        specs.append(
            {
                "source": "files",
                "method": "glob",
                "args": {"pattern": "*.md", "root": str(folder)},
                "recheck": "1h",
            }
        )
    return specs


def _write_heinzels(
    home: Home,
    specs: list[dict[str, object]],
    count: int,
    *,
    seen: dict[int, str] | None,
    slot: str,
) -> None:
    """``count`` heinzels, the n-th watching ``specs[n % len(specs)]``, written straight to disk.

    With ``seen`` (fingerprints per spec), each has already had a turn at
    ``slot`` that saw its input: asleep, with nothing due.
    """
    compiled = compile_contract(_contract("bench"), source="bench")
    for n in range(count):
        heinzel_id = f"hz-{ULID()}"
        name = f"bench-{n:03d}"
        index = n % len(specs)
        own = compiled.model_copy(
            update={
                "name": name,
                "hz": compiled.hz.model_copy(
                    update={"inputs": {"notes": InputSpec.model_validate(specs[index])}}
                ),
            }
        )
        heinzel_dir = home.heinzel_dir(heinzel_id)
        events: list[tuple[EventData, str | None, str | None]] = [
            (HeinzelCreated(name=name), None, None),
            (ContractApproved(version=1, fingerprint=own.fingerprint), None, None),
        ]
        if seen is not None:
            turn, key = str(ULID()), f"{heinzel_id}@{slot}"
            gathered = [{"name": "notes", "fingerprint": seen[index], "size": 20, "moved": True}]
            events += [
                (TurnStarted(cause="schedule", keys=[key], contract_version=1), turn, key),
                (StepDone(step="gather", inputs=gathered), turn, None),
                (TurnFinished(disposition="nothing", causes=["schedule"]), turn, None),
            ]
        write_spine_fast(heinzel_dir, events)
        (heinzel_dir / "contract").mkdir(mode=0o700)
        (heinzel_dir / "contract" / "v1.compiled.json").write_text(own.model_dump_json())
        (heinzel_dir / "contract" / "v1.prose.md").write_text(_contract(name))


def _fetch_all(home: Home, specs: list[dict[str, object]], now: datetime) -> dict[int, str]:
    """The previous tick's work: every input fetched and staged; its fingerprints."""
    cache, registry = SourceCache(home.sources_dir), default_registry()
    fingerprints = {}
    for n, spec in enumerate(specs):
        request = SourceRequest(source="files", method="glob", args=spec["args"])  # type: ignore[arg-type]
        result = registry.fetch(request, now=now)
        cache.put(result)
        fingerprints[n] = result.fingerprint()
    return fingerprints


async def bench_idle(root: Path, heinzels: int, inputs: int, repeat: int) -> dict[str, float]:
    home = Home.resolve(root / "idle", create=True)
    now = datetime.now(UTC)
    slot = slot_key(latest_slot(SCHEDULE, now))  # type: ignore[arg-type]
    specs = _notes(root / "idle-notes", inputs)
    _write_heinzels(home, specs, heinzels, seen=_fetch_all(home, specs, now), slot=slot)
    kernel = await TickKernel.open(home)
    try:
        started = time.perf_counter()
        cold = await kernel.tick_once(now=now)  # type: ignore[attr-defined]
        cold_ms = (time.perf_counter() - started) * 1000
        assert cold.due == 0 and cold.fetches == 0, cold
        samples, reports = [], []
        _opened_spines.clear()
        for _ in range(repeat):
            started = time.perf_counter()
            reports.append(await kernel.tick_once(now=now))  # type: ignore[attr-defined]
            samples.append((time.perf_counter() - started) * 1000)
        samples.sort()
    finally:
        await kernel.close()
    conn = sqlite3.connect(home.index_path)
    bare_ms = median_ms(lambda: conn.execute("SELECT * FROM heinzels").fetchall(), repeat)
    conn.close()
    return {
        "idle_ms": samples[len(samples) // 2],
        "cold_ms": cold_ms,
        "bare_query_ms": bare_ms,
        "queries": max(r.index_queries for r in reports),
        "spines_reported": max(r.spines_opened for r in reports),
        "spines_audited": len(_opened_spines),
        "due": max(r.due for r in reports),
    }


async def bench_shared(root: Path, heinzels: int, inputs: int) -> dict[str, float]:
    home = Home.resolve(root / "shared", create=True)
    (root / "shared-docs").mkdir()
    (home.root / "hz.toml").write_text(
        f'[documents]\nroot = "{root / "shared-docs"}"\n\n[heinzel]\nmax_wakes_per_tick = 1\n'
    )
    specs = _notes(root / "shared-notes", inputs)
    _write_heinzels(home, specs, heinzels, seen=None, slot="")
    kernel = await TickKernel.open(home)
    try:
        started = time.perf_counter()
        report = await kernel.tick_once()  # type: ignore[attr-defined]
        tick_ms = (time.perf_counter() - started) * 1000
    finally:
        await kernel.close()
    return {
        "fetches": report.fetches,
        "woken": len(report.woken),
        "deferred": len(report.deferred),
        "tick_ms": tick_ms,
        "problems": [p.code + " " + p.message for p in report.problems],
    }


FULL = {"idle_heinzels": 500, "shared_heinzels": 200, "inputs": 20, "repeat": 40}
TINY = {"idle_heinzels": 4, "shared_heinzels": 4, "inputs": 2, "repeat": 2}


def main() -> None:
    size = sizes(__doc__, FULL, TINY)
    sys.addaudithook(_audit)
    with tempfile.TemporaryDirectory(dir=os.environ.get("HZ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        idle = asyncio.run(bench_idle(root, size.idle_heinzels, size.inputs, size.repeat))
        print(
            f"idle tick {size.idle_heinzels:<4} {idle['idle_ms']:8.2f} ms "
            f"(first {idle['cold_ms']:.2f} ms)   "
            f"bare SQLite SELECT {idle['bare_query_ms']:.2f} ms   "
            f"ratio {idle['idle_ms'] / idle['bare_query_ms']:.1f}x (target ≤ 5 ms)"
        )
        print(
            f"               index queries {idle['queries']}, spines opened "
            f"{idle['spines_reported']} (audited opens {idle['spines_audited']}), due {idle['due']}"
        )
        shared = asyncio.run(bench_shared(root, size.shared_heinzels, size.inputs))
        print(
            f"{f'{size.shared_heinzels} over {size.inputs}':<15}fetches {shared['fetches']} "
            f"(target {size.inputs}), woken {shared['woken']}, "
            f"deferred {shared['deferred']}, tick {shared['tick_ms']:.0f} ms (one turn included)"
        )
        for problem in shared["problems"]:
            print(f"               problem: {problem}")
        emit(
            {
                "tick_500_idle_ms": round(idle["idle_ms"], 3),
                "tick_500_idle_first_ms": round(idle["cold_ms"], 3),
                "tick_bare_query_ms": round(idle["bare_query_ms"], 3),
                "tick_idle_index_queries": idle["queries"],
                "tick_idle_spines_opened": idle["spines_audited"],
                "fetches_200x20": shared["fetches"],
            }
        )


if __name__ == "__main__":
    run(main)
