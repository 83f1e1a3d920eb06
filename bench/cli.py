"""CLI benchmark: ``hz heinzel list --json`` as a process over a 500-heinzel home.

Run: ``python bench/cli.py`` (``--tiny`` for the smoke test's run; each size
is an option too). The floor, measured in the same run, is a plain Python
script that reads the same index with ``sqlite3`` and prints its rows with
``orjson``. ``hz`` runs as a user starts it, once with no daemon (it reads
the index) and once beside the home's running daemon (it asks the daemon),
once that daemon has finished its first tick.

Every figure is the median of ``repeat`` fresh interpreters, from spawning
to exit, after one run that is not counted. An installed hz runs from
compiled bytecode; so that a checkout measures the same (whatever
``PYTHONDONTWRITEBYTECODE`` says), the children get a private bytecode
cache, which that first run fills. The last line is one JSON object of
named figures, named after the full sizes. Target (issue 16): ≤ 0.25 s.
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

import orjson
from _common import emit, run, sizes, turn_events, write_spine_fast
from ulid import ULID

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel

FULL = {"heinzels": 500, "repeat": 9}
TINY = {"heinzels": 3, "repeat": 1}

HZ = "import sys; from hz_tui.entry import main; raise SystemExit(main())"
LIST = ["heinzel", "list", "--json"]
FLOOR = """
import sqlite3, sys, orjson
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
cur = conn.execute("SELECT * FROM heinzels ORDER BY name, id")
names = [d[0] for d in cur.description]
rows = [dict(zip(names, row)) for row in cur]
sys.stdout.buffer.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2) + b"\\n")
"""


def build_home(root: Path, heinzels: int) -> Home:
    """``heinzels`` heinzels of 37 events each (five whole turns, none left running), indexed."""
    home = Home.resolve(root, create=True)
    for _ in range(heinzels):
        heinzel_id = f"hz-{ULID()}"
        write_spine_fast(home.heinzel_dir(heinzel_id), turn_events(heinzel_id, 37))

    async def index() -> None:
        kernel = await Kernel.open(home)
        await kernel.close()

    asyncio.run(index())
    return home


def child_env(home: Home, bytecode: Path) -> dict[str, str]:
    """This environment without hz's knobs, for ``home``, with a private bytecode cache."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HZ_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    return env | {
        "HZ_HOME": str(home.root),
        "HZ_TICK_SECONDS": "600",  # a daemon's tick never runs beside the measurement
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "PYTHONPYCACHEPREFIX": str(bytecode),
    }


def median_run_s(argv: list[str], env: dict[str, str], rows: int, repeat: int) -> float:
    """Median seconds from spawning ``argv`` to its exit; each run must print ``rows`` rows."""
    samples = []
    for attempt in range(repeat + 1):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, env=env, timeout=120)
        elapsed = time.perf_counter() - started
        assert done.returncode == 0, done.stderr.decode()
        assert len(orjson.loads(done.stdout)) == rows, done.stdout[:200]
        if attempt:
            samples.append(elapsed)
    return statistics.median(samples)


def hz(env: dict[str, str], *args: str) -> bytes:
    argv = [sys.executable, "-c", HZ, *args]
    return subprocess.run(argv, env=env, check=True, timeout=120, capture_output=True).stdout


def first_tick_done(env: dict[str, str]) -> None:
    """Wait until the daemon finished its first tick: that tick does the home's first-time
    work (500 drafts looked at), which a listing beside it would measure too."""
    deadline = time.monotonic() + 120
    while orjson.loads(hz(env, "daemon", "status", "--json"))["ticks"] < 1:
        assert time.monotonic() < deadline, "the daemon's first tick did not finish"
        time.sleep(0.1)


def main() -> None:
    size = sizes(__doc__, FULL, TINY)
    with tempfile.TemporaryDirectory(dir=os.environ.get("HZ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        home = build_home(root / "home", size.heinzels)
        env = child_env(home, root / "bytecode")
        floor = median_run_s(
            [sys.executable, "-c", FLOOR, str(home.index_path)], env, size.heinzels, size.repeat
        )
        alone = median_run_s([sys.executable, "-c", HZ, *LIST], env, size.heinzels, size.repeat)
        hz(env, "daemon", "start")
        try:
            first_tick_done(env)
            beside = median_run_s(
                [sys.executable, "-c", HZ, *LIST], env, size.heinzels, size.repeat
            )
        finally:
            hz(env, "daemon", "stop")
        print(f"floor: sqlite3 + orjson script        {floor:.3f} s")
        print(
            f"hz heinzel list --json, {size.heinzels} heinzels, no daemon  {alone:.3f} s   "
            f"ratio {alone / floor:.1f}x (target ≤ 0.25 s)"
        )
        print(f"hz heinzel list --json, beside the daemon  {beside:.3f} s")
        emit(
            {
                "list_cli_s": round(alone, 3),
                "list_cli_daemon_s": round(beside, 3),
                "list_cli_floor_s": round(floor, 3),
                "list_cli_ratio": round(alone / floor, 2),
            }
        )


if __name__ == "__main__":
    run(main)
