"""Cockpit benchmark: cold start with 500 heinzels, append → screen latency, a 100-spine burst.

Run: ``python bench/cockpit.py``. Every figure sits beside a baseline from
the same run: the cold start of an empty Textual app (both in fresh
processes), and one ``heinzel.show`` vs. one ``heinzel.list`` of all rows
(the refresher picks between them). Appends are made by a real ``Kernel``
in the benchmark process; "on screen" means the home table holds the new
cells and has refreshed since. The last line is one JSON object.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import emit, turn_events, write_spine_fast
from ulid import ULID

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import TurnStarted
from hz_tui.app import CockpitApp
from hz_tui.widgets.heinzel_table import HeinzelTable

HEINZELS = 500
SAMPLES = 40
BURST = 100
READY = "READY"

EMPTY_APP = """
import time
from textual.app import App
from textual.widgets import Static

class Empty(App):
    def compose(self):
        yield Static("empty")

async def ready(pilot):
    await pilot.pause()
    print("READY", flush=True)
    pilot.app.exit()

Empty().run(headless=True, size=(120, 40), auto_pilot=ready)
"""

COCKPIT_APP = """
import asyncio, sys
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_tui.app import CockpitApp

home = Home.resolve(sys.argv[1])
client = asyncio.run(LocalClient.open(home))
app = CockpitApp(home, client, live=False)

async def ready(pilot):
    await app.loaded.wait()
    await pilot.pause()
    print("READY", len(app.rows), flush=True)
    app.exit()

app.run(headless=True, size=(120, 40), auto_pilot=ready)
asyncio.run(client.close())
"""


def build_home(root: Path) -> tuple[Home, list[str]]:
    home = Home.resolve(root, create=True)
    ids = []
    for _ in range(HEINZELS):
        heinzel_id = f"hz-{ULID()}"
        ids.append(heinzel_id)
        # 37 events: created, approved and five whole turns, so no turn is left running.
        write_spine_fast(home.heinzel_dir(heinzel_id), turn_events(heinzel_id, 37))

    async def index() -> None:
        kernel = await Kernel.open(home)
        await kernel.close()

    asyncio.run(index())
    return home, ids


def cold_start(script: str, *args: str, repeat: int = 3) -> float:
    """Median seconds from spawning a fresh interpreter to its first drawn frame."""
    samples = []
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", script, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        assert READY in done.stdout, done.stdout + done.stderr
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def until(check: object, timeout: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout
    while not check():  # type: ignore[operator]
        if time.perf_counter() > deadline:
            raise TimeoutError("the change never reached the table")
        await asyncio.sleep(0.0005)


async def drawn(table: HeinzelTable) -> None:
    """Resolve after the table's next refresh (the change has been painted)."""
    painted = asyncio.Event()
    table.call_after_refresh(painted.set)
    await painted.wait()


async def live_figures(home: Home, ids: list[str]) -> dict[str, float]:
    client = await LocalClient.open(home)
    writer = await Kernel.open(home)
    figures: dict[str, float] = {}
    try:
        started = time.perf_counter()
        await client.call(ops.SHOW, ops.HeinzelRef(ref=ids[0]))
        figures["show_one_ms"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        await client.call(ops.LIST, ops.ListRequest())
        figures["list_500_ms"] = (time.perf_counter() - started) * 1000
        app = CockpitApp(home, client)
        async with app.run_test(size=(120, 40)) as pilot:
            await app.loaded.wait()
            await pilot.pause(0.3)
            table = app.get_home().query_one(HeinzelTable)
            latencies = []
            for n, heinzel_id in enumerate(ids[:SAMPLES]):
                turn = str(ULID())
                started = time.perf_counter()
                await writer.append(
                    heinzel_id,
                    TurnStarted(cause="asked", keys=[f"{heinzel_id}@bench{n}"], contract_version=1),
                    turn=turn,
                )
                await until(lambda h=heinzel_id: table.shown[h]["state"].plain == "awake")
                await drawn(table)
                latencies.append((time.perf_counter() - started) * 1000)
            latencies.sort()
            figures["append_to_screen_p50_ms"] = statistics.median(latencies)
            figures["append_to_screen_p99_ms"] = latencies[
                min(len(latencies) - 1, int(0.99 * len(latencies)))
            ]
            burst = ids[SAMPLES : SAMPLES + BURST]
            started = time.perf_counter()
            for heinzel_id in burst:
                await writer.append(
                    heinzel_id,
                    TurnStarted(cause="asked", keys=[f"{heinzel_id}@burst"], contract_version=1),
                    turn=str(ULID()),
                )
            figures["burst_append_ms"] = (time.perf_counter() - started) * 1000
            await until(lambda: all(table.shown[h]["state"].plain == "awake" for h in burst))
            await drawn(table)
            figures["burst_100_ms"] = (time.perf_counter() - started) * 1000
    finally:
        await writer.close()
        await client.close()
    return figures


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, ids = build_home(Path(tmp) / "home")
        empty = cold_start(EMPTY_APP)
        cockpit = cold_start(COCKPIT_APP, str(home.root))
        figures = asyncio.run(live_figures(home, ids))
    print(f"cold start, empty Textual app:      {empty:.2f} s")
    print(f"cold start, cockpit, {HEINZELS} heinzels:  {cockpit:.2f} s  ({cockpit / empty:.1f}x)")
    print(
        f"heinzel.show one: {figures['show_one_ms']:.1f} ms, "
        f"heinzel.list all: {figures['list_500_ms']:.1f} ms"
    )
    print(
        f"append → screen p50 {figures['append_to_screen_p50_ms']:.1f} ms, "
        f"p99 {figures['append_to_screen_p99_ms']:.1f} ms ({SAMPLES} samples)"
    )
    print(
        f"burst of {BURST} spines: appended in {figures['burst_append_ms']:.0f} ms, "
        f"all on screen after {figures['burst_100_ms']:.0f} ms"
    )
    emit(
        {
            "cold_start_500_s": round(cockpit, 3),
            "cold_start_empty_s": round(empty, 3),
            "cold_start_ratio": round(cockpit / empty, 2),
            "append_to_screen_p50_ms": round(figures["append_to_screen_p50_ms"], 2),
            "append_to_screen_p99_ms": round(figures["append_to_screen_p99_ms"], 2),
            "burst_100_ms": round(figures["burst_100_ms"], 1),
            "show_one_ms": round(figures["show_one_ms"], 2),
            "list_500_ms": round(figures["list_500_ms"], 2),
        }
    )


if __name__ == "__main__":
    main()
