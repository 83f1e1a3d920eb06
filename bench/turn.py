"""Turn benchmark: one full turn (local model, a placed draft) minus model time, against fsyncs.

Run: ``python bench/turn.py``. Every durable write the turn makes (spine
lines, body syncs, the document's atomic write, the source cache, the inbox
file) is an ``fsync``; the floor is the same number of raw write+fsync
calls of a spine-sized line on the same disk, measured in the same run.
Model time is read from the spine (first ``attempt.started`` to the think
step's ``step.done``) and excluded. Target: overhead ≤ 2× the floor.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import emit

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import digest_contract, make_world

TURNS = 12

_real_fsync = os.fsync
_fsyncs = 0


def _counting_fsync(fd: int) -> None:
    global _fsyncs
    _fsyncs += 1
    _real_fsync(fd)


def _model_seconds(events: list[object], turn: str) -> float:
    mine = [e for e in events if e.turn == turn]  # type: ignore[attr-defined]
    start = next(e for e in mine if e.kind == "attempt.started")  # type: ignore[attr-defined]
    done = next(e for e in mine if e.kind == "step.done" and e.data["step"] == "think")  # type: ignore[attr-defined]
    return (datetime.fromisoformat(done.ts) - datetime.fromisoformat(start.ts)).total_seconds()  # type: ignore[attr-defined]


def raw_floor_ms(directory: Path, count: int, rounds: int = 5) -> float:
    line = b'{"v":1,"seq":1,"prev":"' + b"0" * 64 + b'"}' + b" " * 230 + b"\n"
    fd = os.open(directory / "raw.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    samples = []
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            for _ in range(count):
                os.write(fd, line)
                _real_fsync(fd)
            samples.append((time.perf_counter() - started) * 1000)
    finally:
        os.close(fd)
    return statistics.median(samples)


async def main() -> None:
    global _fsyncs
    os.environ.pop("HZ_MODEL_DELAY_MS", None)
    with tempfile.TemporaryDirectory(dir=os.environ.get("HZ_BENCH_DIR")) as tmp:
        world = make_world(Path(tmp))
        kernel = await Kernel.open(Home.resolve(world.home), long_lived=True)
        made = await kernel.new(text=digest_contract())
        await kernel.approve(ref=made.id)
        await kernel.wake(ref=made.id)
        overheads, totals, models, writes = [], [], [], []
        os.fsync = _counting_fsync
        try:
            for _ in range(TURNS):
                _fsyncs = 0
                started = time.perf_counter()
                report = await kernel.wake(ref=made.id)
                total = time.perf_counter() - started
                async with kernel.holding(made.id) as held:
                    model = _model_seconds(held.scan.events, str(report.turn))
                totals.append(total * 1000)
                models.append(model * 1000)
                overheads.append((total - model) * 1000)
                writes.append(_fsyncs)
        finally:
            os.fsync = _real_fsync
        await kernel.close()
        durable = int(statistics.median(writes))
        floor = raw_floor_ms(Path(tmp), durable)
    overhead = statistics.median(overheads)
    ratio = overhead / floor
    total_ms, model_ms = statistics.median(totals), statistics.median(models)
    print(f"turn          {total_ms:8.2f} ms   of which model {model_ms:.2f} ms")
    print(f"overhead      {overhead:8.2f} ms   ({durable} durable writes per turn)")
    print(f"fsync floor   {floor:8.2f} ms   ({durable} raw write+fsync of a spine line)")
    print(f"ratio         {ratio:8.2f}x   (target ≤ 2x)")
    emit(
        {
            "turn_overhead_ratio": round(ratio, 3),
            "turn_overhead_ms": round(overhead, 3),
            "turn_total_ms": round(statistics.median(totals), 3),
            "turn_model_ms": round(statistics.median(models), 3),
            "turn_durable_writes": durable,
            "fsync_floor_ms": round(floor, 3),
        }
    )


if __name__ == "__main__":
    asyncio.run(main())
