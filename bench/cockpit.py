"""Cockpit benchmark: cold start of 500 heinzels, append → screen, a burst, opening a transcript.

Run: ``python bench/cockpit.py``. Every figure sits beside a baseline from
the same run:

* cold start: an empty Textual app, both in fresh interpreters; the
  cockpit starts as ``hz`` does with no daemon running (``connect(...,
  defer_kernel=True)``: the first rows come from the index, the kernel
  opens after the first frame) and reports how much of its start went to
  imports; then as ``hz`` does beside the home's running daemon (the same
  call attaches to it: the first rows come from the daemon,
  ``cold_start_500_daemon_s``). Its start ends when the frame that first shows the rows is drawn
  (``CockpitApp.loaded``); what the cockpit fills in after that frame (the
  preview, the activity) is in the figure printed beside it, the moment it
  is first idle (``cold_start_settled_s``);
* append → screen and the burst: a bare Textual app that watches a folder
  with the same ``watchfiles`` tuning and shows the newest line it read in
  one ``Static`` — the floor for "a file grew, the screen shows it".

Appends are made by a real ``Kernel`` in the benchmark process (the
baseline writes and fsyncs plain lines); "on screen" means the widget holds
the new content and has refreshed since. The burst's 100 appends are issued
at once; its figure runs from the moment the last is durable to the moment
all 100 rows are drawn.

Opening a transcript: a real turn of the local model whose body holds (at
least) 200 records, pushed onto the cockpit until its lines are drawn
(``turn.transcript`` through the client, laid out, wrapped, painted); the
baseline pushes a screen onto a bare Textual app that reads the same body
file and shows its records, a line each, in a ``Log``.

``--tiny`` (the smoke test's run) shrinks every size; each size is an
option too. The last line is one JSON object of named figures, named after
the full sizes.
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

import orjson
from _common import emit, run, sizes, turn_events, write_spine_fast
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Log, Static
from ulid import ULID
from watchfiles import awatch

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.contracts import render_template
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import body_path
from hz_kernel.vocabulary import TurnStarted
from hz_tui.app import CockpitApp
from hz_tui.screens.transcript import TranscriptScreen
from hz_tui.watcher import DEBOUNCE_MS, RUST_TIMEOUT_MS, STEP_MS
from hz_tui.widgets.heinzel_table import HeinzelTable

FULL = {"heinzels": 500, "samples": 40, "burst": 100, "repeat": 3, "records": 200, "opens": 20}
TINY = {"heinzels": 5, "samples": 2, "burst": 3, "repeat": 1, "records": 20, "opens": 2}
READY = "READY"

EMPTY_APP = """
import time
from textual.app import App
from textual.widgets import Static

class Empty(App):
    def compose(self):
        yield Static("empty")

    def on_mount(self):
        self.call_after_refresh(lambda: print("READY", time.time(), flush=True))

async def ready(pilot):
    await pilot.pause()
    pilot.app.exit()

Empty().run(headless=True, size=(120, 40), auto_pilot=ready)
"""

COCKPIT_APP = """
import time
started = time.perf_counter()
from hz_tui.entry import prepare_process
prepare_process()  # as the hz command does; the cockpit enables the collector after its frame
import asyncio, sys
from hz_kernel.connect import connect
from hz_kernel.home import Home
from hz_tui.app import CockpitApp

print("IMPORTED", time.perf_counter() - started, flush=True)


async def main():
    # One event loop for the connection and the app, as hz has: a daemon's client
    # belongs to the loop it was made in.
    home = Home.resolve(sys.argv[1])
    client = await connect(home, defer_kernel=True)
    app = CockpitApp(home, client, live=False)
    said_drawn = app.first_frame_drawn

    def drawn():  # called right after the frame that drew the first rows
        if not app.loaded.is_set():
            print("READY", time.time(), len(app.rows), flush=True)
        said_drawn()

    app.first_frame_drawn = drawn

    async def ready(pilot):
        await app.loaded.wait()
        await pilot.pause()
        print("SETTLED", time.time(), flush=True)
        app.exit()

    try:
        await app.run_async(headless=True, size=(120, 40), auto_pilot=ready)
    finally:
        await client.close()


asyncio.run(main())
"""


def build_home(root: Path, heinzels: int) -> tuple[Home, list[str]]:
    home = Home.resolve(root, create=True)
    ids = []
    for _ in range(heinzels):
        heinzel_id = f"hz-{ULID()}"
        ids.append(heinzel_id)
        # 37 events: created, approved and five whole turns, so no turn is left running.
        write_spine_fast(home.heinzel_dir(heinzel_id), turn_events(heinzel_id, 37))

    async def index() -> None:
        kernel = await Kernel.open(home)
        await kernel.close()

    asyncio.run(index())
    return home, ids


def cold_start(script: str, *args: str, bytecode: Path, repeat: int) -> dict[str, float]:
    """Medians, in seconds from spawning a fresh interpreter: to its first drawn frame
    (``ready``), to its first idle moment after it (``settled``: 0 when the script does not
    say), and of its imports (``imports``: 0 likewise).

    The frame's moment is the wall clock the app prints right after that
    frame is drawn (an after-refresh callback, for the cockpit and the empty
    app alike), not when a pilot task next gets a turn, nor the process's end
    (closing a kernel is not part of starting). An
    installed hz runs from compiled bytecode; so that a checkout measures
    the same (and whatever ``PYTHONDONTWRITEBYTECODE`` says), the children
    get a private bytecode cache, filled by one run that is not counted.
    """
    samples: dict[str, list[float]] = {"ready": [], "settled": [], "imports": []}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "PYTHONPYCACHEPREFIX": str(bytecode),
    }
    for attempt in range(repeat + 1):
        started = time.time()
        done = subprocess.run(
            [sys.executable, "-c", script, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        said = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line}
        assert READY in said, done.stdout + done.stderr
        if attempt == 0:
            continue
        samples["ready"].append(float(said[READY][1]) - started)
        if "SETTLED" in said:
            samples["settled"].append(float(said["SETTLED"][1]) - started)
        if "IMPORTED" in said:
            samples["imports"].append(float(said["IMPORTED"][1]))
    return {name: statistics.median(got) if got else 0.0 for name, got in samples.items()}


def daemon(home: Home, command: str) -> None:
    """``hz daemon start|stop`` for ``home`` (its tick set far apart: it never runs meanwhile)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
    env |= {"HZ_HOME": str(home.root), "HZ_TICK_SECONDS": "600"}
    subprocess.run(
        [sys.executable, "-m", "hz_kernel.cli", "daemon", command],
        env=env,
        check=True,
        timeout=120,
        stdout=subprocess.DEVNULL,
    )


async def until(check: object, timeout: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout
    while not check():  # type: ignore[operator]
        if time.perf_counter() > deadline:
            raise TimeoutError("the change never reached the table")
        await asyncio.sleep(0.0005)


class Mirror(App[None]):
    """The baseline: a folder watched like the cockpit watches spines, its newest line shown."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.lines: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Static("", id="line")

    def on_mount(self) -> None:
        self.run_worker(self.follow())

    async def follow(self) -> None:
        async for changes in awatch(
            self.folder, debounce=DEBOUNCE_MS, step=STEP_MS, rust_timeout=RUST_TIMEOUT_MS
        ):
            for _, path in changes:
                tail = Path(path).read_bytes().rsplit(b"\n", 2)
                self.lines[Path(path).name] = tail[-2].decode() if len(tail) > 1 else ""
            self.query_one(Static).update(
                f"{len(self.lines)} files, newest: {max(self.lines.values())}"
            )


async def painted(widget: Widget) -> None:
    """Resolve after the widget's next refresh (the change has been drawn)."""
    done = asyncio.Event()
    widget.call_after_refresh(done.set)
    await done.wait()


def append_line(path: Path, line: str) -> None:
    with path.open("ab") as out:
        out.write(line.encode() + b"\n")
        out.flush()
        os.fsync(out.fileno())


def percentiles(latencies: list[float]) -> tuple[float, float]:
    latencies = sorted(latencies)
    return statistics.median(latencies), latencies[
        min(len(latencies) - 1, int(0.99 * len(latencies)))
    ]


async def baseline_figures(folder: Path, samples: int, burst: int) -> dict[str, float]:
    folder.mkdir()
    app = Mirror(folder)
    figures: dict[str, float] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        shown = app.query_one(Static)
        latencies = []
        for n in range(samples):
            line = f"{n:06d}"
            started = time.perf_counter()
            append_line(folder / "one.jsonl", line)
            await until(lambda line=line: app.lines.get("one.jsonl") == line)
            await painted(shown)
            latencies.append((time.perf_counter() - started) * 1000)
        figures["p50"], figures["p99"] = percentiles(latencies)
        for n in range(burst):
            append_line(folder / f"b{n:03d}.jsonl", "warm")
        await until(lambda: len(app.lines) == burst + 1)
        await pilot.pause(0.2)
        for n in range(burst):
            append_line(folder / f"b{n:03d}.jsonl", "burst")
        started = time.perf_counter()
        await until(lambda: sum(v == "burst" for v in app.lines.values()) == burst)
        await painted(shown)
        figures["burst"] = (time.perf_counter() - started) * 1000
    return figures


async def live_figures(home: Home, ids: list[str], samples: int, burst: int) -> dict[str, float]:
    client = await LocalClient.open(home)
    writer = await Kernel.open(home)
    figures: dict[str, float] = {}
    try:
        started = time.perf_counter()
        await client.call(ops.LIST, ops.ListRequest(ids=ids[:1]))
        figures["list_one_ms"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        await client.call(ops.LIST, ops.ListRequest())
        figures["list_500_ms"] = (time.perf_counter() - started) * 1000
        app = CockpitApp(home, client)
        async with app.run_test(size=(120, 40)) as pilot:
            await app.loaded.wait()
            await pilot.pause(0.3)
            table = app.get_home().query_one(HeinzelTable)
            latencies = []
            for n, heinzel_id in enumerate(ids[:samples]):
                turn = str(ULID())
                started = time.perf_counter()
                await writer.append(
                    heinzel_id,
                    TurnStarted(cause="asked", keys=[f"{heinzel_id}@bench{n}"], contract_version=1),
                    turn=turn,
                )
                await until(lambda h=heinzel_id: table.shown[h]["state"].plain == "awake")
                await painted(table)
                latencies.append((time.perf_counter() - started) * 1000)
            figures["append_to_screen_p50_ms"], figures["append_to_screen_p99_ms"] = percentiles(
                latencies
            )
            bursting = ids[samples : samples + burst]
            started = time.perf_counter()
            await asyncio.gather(
                *(
                    writer.append(
                        heinzel_id,
                        TurnStarted(
                            cause="asked", keys=[f"{heinzel_id}@burst"], contract_version=1
                        ),
                        turn=str(ULID()),
                    )
                    for heinzel_id in bursting
                )
            )
            durable = time.perf_counter()
            figures["burst_append_ms"] = (durable - started) * 1000
            await until(lambda: all(table.shown[h]["state"].plain == "awake" for h in bursting))
            await painted(table)
            figures["burst_100_ms"] = (time.perf_counter() - durable) * 1000
    finally:
        await writer.close()
        await client.close()
    return figures


def transcript_home(root: Path, records: int) -> tuple[Home, str, str]:
    """A home whose heinzel's newest turn (a real one, the local model's) has ``records`` or
    more body records: a digest of one long note, paced (1 ms a chunk) so it streams one
    chunk record per 48 characters, as a provider's answer arrives in many small deltas."""
    docs = root / "docs"
    (docs / "notes").mkdir(parents=True)
    root.joinpath("home").mkdir(mode=0o700)
    home = Home.resolve(root / "home", create=True)
    home.settings_path.write_text(f'[documents]\nroot = "{docs}"\n')
    contract = render_template(
        "digest", {"name": "long-digest", "notes": "notes", "document": "reports/long.md"}
    )

    async def build() -> tuple[str, str]:
        kernel = await Kernel.open(home)
        try:
            made = await kernel.new(text=contract)
            await kernel.approve(ref=made.id)
            # About 0.65 chunk records per item, plus six others (input, context, …).
            items = max(4, (records - 6) * 8 // 5)
            lines = "".join(f"- item {n:05d} of the long week\n" for n in range(items))
            (docs / "notes" / "long.md").write_text("# Long\n" + lines)
            os.environ["HZ_MODEL_DELAY_MS"] = "1"
            try:
                await kernel.wake(ref=made.id)
            finally:
                os.environ.pop("HZ_MODEL_DELAY_MS", None)
            answer = await kernel.turn_transcript(ref=made.id)
            if len(answer.records) < records:
                raise RuntimeError(
                    f"the turn has {len(answer.records)} body records, not {records}"
                )
            return made.id, str(answer.turn)
        finally:
            await kernel.close()

    heinzel, turn = asyncio.run(build())
    return home, heinzel, turn


class Plain(Screen[None]):
    """The baseline's page: the body file's records, one line each, in Textual's own ``Log``
    (which, like the transcript, draws only the lines in sight)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        yield Log(id="plain")

    def on_mount(self) -> None:
        records = [orjson.loads(line) for line in self.path.read_bytes().splitlines()]
        self.query_one(Log).write_lines(str(record) for record in records)


async def transcript_figures(home: Home, heinzel: str, turn: str, opens: int) -> dict[str, float]:
    """Median ms from asking for a transcript page to its lines drawn, and the baseline's."""
    figures: dict[str, float] = {}
    bare = App[None]()
    async with bare.run_test(size=(120, 40)) as pilot:
        samples = []
        for _ in range(opens):
            started = time.perf_counter()
            page = Plain(body_path(home.heinzel_dir(heinzel), turn))
            await bare.push_screen(page)
            await painted(page.query_one(Log))
            samples.append((time.perf_counter() - started) * 1000)
            bare.pop_screen()
            await pilot.pause()
        figures["baseline"] = statistics.median(samples)
    client = await LocalClient.open(home)
    try:
        app = CockpitApp(home, client, live=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await app.loaded.wait()
            await pilot.pause(0.2)
            samples = []
            shown = 0
            for _ in range(opens):
                started = time.perf_counter()
                screen = TranscriptScreen(heinzel, turn)
                await app.push_screen(screen)
                await until(lambda s=screen: s.model.loaded and len(s.view.lines) > 1)
                await painted(screen.view)
                samples.append((time.perf_counter() - started) * 1000)
                shown = len(screen.model.records)
                app.pop_screen()
                await pilot.pause()
            figures["open"] = statistics.median(samples)
            figures["records"] = shown
    finally:
        await client.close()
    return figures


def main() -> None:
    size = sizes(__doc__, FULL, TINY)
    if size.heinzels < size.samples + size.burst:
        raise SystemExit("--heinzels must cover --samples plus --burst")
    with tempfile.TemporaryDirectory() as tmp:
        home, ids = build_home(Path(tmp) / "home", size.heinzels)
        bytecode = Path(tmp) / "bytecode"
        empty = cold_start(EMPTY_APP, bytecode=bytecode, repeat=size.repeat)["ready"]
        started = cold_start(COCKPIT_APP, str(home.root), bytecode=bytecode, repeat=size.repeat)
        cockpit, imports = started["ready"], started["imports"]
        daemon(home, "start")
        try:
            beside = cold_start(COCKPIT_APP, str(home.root), bytecode=bytecode, repeat=size.repeat)
        finally:
            daemon(home, "stop")
        base = asyncio.run(baseline_figures(Path(tmp) / "mirror", size.samples, size.burst))
        figures = asyncio.run(live_figures(home, ids, size.samples, size.burst))
        long_home, heinzel, turn = transcript_home(Path(tmp) / "transcript", size.records)
        opened = asyncio.run(transcript_figures(long_home, heinzel, turn, size.opens))
    print(f"cold start, empty Textual app:      {empty:.2f} s")
    print(
        f"cold start, cockpit, {size.heinzels} heinzels:  {cockpit:.2f} s  "
        f"({cockpit / empty:.1f}x; "
        f"{imports:.2f} s of it importing; idle after {started['settled']:.2f} s)"
    )
    print(
        f"cold start, cockpit, {size.heinzels} heinzels, beside the daemon:  "
        f"{beside['ready']:.2f} s  ({beside['ready'] / empty:.1f}x)"
    )
    print(
        f"heinzel.list of one: {figures['list_one_ms']:.1f} ms, "
        f"of all {size.heinzels}: {figures['list_500_ms']:.1f} ms"
    )
    print(
        f"append → screen p50 {figures['append_to_screen_p50_ms']:.1f} ms, "
        f"p99 {figures['append_to_screen_p99_ms']:.1f} ms ({size.samples} samples); "
        f"bare Textual app watching a file: p50 {base['p50']:.1f} ms, p99 {base['p99']:.1f} ms"
    )
    print(
        f"burst of {size.burst} spines (issued at once, durable after "
        f"{figures['burst_append_ms']:.0f} ms): all on screen {figures['burst_100_ms']:.0f} ms "
        f"later; bare app, {size.burst} files: {base['burst']:.0f} ms"
    )
    print(
        f"open a transcript of {opened['records']:.0f} body records: {opened['open']:.1f} ms "
        f"(median of {size.opens}); bare app showing the same body: {opened['baseline']:.1f} ms"
    )
    emit(
        {
            "cold_start_500_s": round(cockpit, 3),
            "cold_start_empty_s": round(empty, 3),
            "cold_start_ratio": round(cockpit / empty, 2),
            "cold_start_imports_s": round(imports, 3),
            "cold_start_settled_s": round(started["settled"], 3),
            "cold_start_500_daemon_s": round(beside["ready"], 3),
            "append_to_screen_p50_ms": round(figures["append_to_screen_p50_ms"], 2),
            "append_to_screen_p99_ms": round(figures["append_to_screen_p99_ms"], 2),
            "baseline_append_to_screen_p50_ms": round(base["p50"], 2),
            "baseline_append_to_screen_p99_ms": round(base["p99"], 2),
            "burst_100_ms": round(figures["burst_100_ms"], 1),
            "burst_append_ms": round(figures["burst_append_ms"], 1),
            "baseline_burst_100_ms": round(base["burst"], 1),
            "list_one_ms": round(figures["list_one_ms"], 2),
            "list_500_ms": round(figures["list_500_ms"], 2),
            "open_transcript_ms": round(opened["open"], 1),
            "baseline_open_transcript_ms": round(opened["baseline"], 1),
            "transcript_records": int(opened["records"]),
        }
    )


if __name__ == "__main__":
    run(main)
