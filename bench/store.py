"""Store benchmark: append, list, reindex and verify, each beside a baseline from the same run.

Run: ``python bench/store.py`` (``--tiny`` for the smoke test's run; each
size is an option too, ``--help`` lists them). The last line is one JSON
object of named figures, named after the full sizes. Targets (issue "The
foundation", then issue 16): append ≤ 1.3× raw write+fsync, list 500 ≤ 5 ms,
reindex 500×200 ≤ 1.0 s (its floor: read, orjson-decode and sha256 every
line), verify 1 MB ≤ 8 ms.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from _common import emit, median_ms, run, sizes, turn_events, write_spine_fast
from ulid import ULID

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.envelope import encode
from hz_kernel.store.scan import scan_file
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import StepDone


def bench_append(root: Path, rounds: int, per_round: int) -> tuple[float, float, float]:
    """Median µs per append, per raw write+fsync of the same bytes, and their ratio."""
    payload = StepDone(step="think", output_hash="b" * 64, output_size=2048, tokens=900)
    sample = encode(payload, seq=1, prev="0" * 64, turn="01JTURN0000000000000000000", key=None)
    ours, raw = [], []
    writer = SpineWriter.open(root / "append")
    fd = os.open(root / "raw.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            for _ in range(per_round):
                os.write(fd, sample + b"\n")
                os.fsync(fd)
            raw.append((time.perf_counter() - started) / per_round * 1e6)
            started = time.perf_counter()
            for _ in range(per_round):
                writer.append(payload, turn="01JTURN0000000000000000000")
            ours.append((time.perf_counter() - started) / per_round * 1e6)
    finally:
        os.close(fd)
        writer.close()
    ours.sort()
    raw.sort()
    return ours[len(ours) // 2], raw[len(raw) // 2], ours[len(ours) // 2] / raw[len(raw) // 2]


def reindex_floor(paths: list[Path]) -> float:
    """Seconds to do what any reindex must: read every spine, decode and hash each line."""
    started = time.perf_counter()
    for path in paths:
        for line in path.read_bytes().split(b"\n")[:-1]:
            orjson.loads(line)
            hashlib.sha256(line).digest()
    return time.perf_counter() - started


async def bench_index(root: Path, heinzels: int, events: int, repeat: int) -> dict[str, float]:
    home = Home.resolve(root / "home", create=True)
    total_bytes = 0
    for _ in range(heinzels):
        heinzel_id = f"hz-{ULID()}"
        total_bytes += write_spine_fast(
            home.heinzel_dir(heinzel_id), turn_events(heinzel_id, events)
        )
    kernel = await Kernel.open(home, reconcile=False)
    started = time.perf_counter()
    report = await kernel.reindex()
    reindex_s = time.perf_counter() - started

    paths = sorted(home.heinzel_root.glob("hz-*/session.jsonl"))
    started = time.perf_counter()
    for path in paths:
        path.read_bytes()
    read_all_s = time.perf_counter() - started
    floor_s = reindex_floor(paths)

    list_samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        listed = await kernel.list_heinzels()
        list_samples.append((time.perf_counter() - started) * 1000)
    assert len(listed.items) == heinzels
    list_samples.sort()
    await kernel.close()

    conn = sqlite3.connect(home.index_path)
    bare_ms = median_ms(lambda: conn.execute("SELECT * FROM heinzels").fetchall(), repeat)
    conn.close()
    return {
        "reindex_s": reindex_s,
        "reindex_events": report.events,
        "read_all_s": read_all_s,
        "floor_s": floor_s,
        "list_ms": list_samples[len(list_samples) // 2],
        "bare_query_ms": bare_ms,
        "spine_bytes": total_bytes,
    }


async def bench_verify(root: Path, spine_bytes: int, repeat: int) -> dict[str, float]:
    home = Home.resolve(root / "verify-home", create=True)
    heinzel_id = f"hz-{ULID()}"
    events = turn_events(heinzel_id, 4000)
    size = 0
    n = 0
    while size < spine_bytes:
        n += 200
        size = write_spine_fast(home.heinzel_dir(heinzel_id), events[:n])
    spine = home.heinzel_dir(heinzel_id) / "session.jsonl"
    kernel = await Kernel.open(home)
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        (report,) = await kernel.verify(heinzel_id)
        samples.append((time.perf_counter() - started) * 1000)
    await kernel.close()
    assert report.ok
    samples.sort()
    data = spine.read_bytes()
    lines = data.split(b"\n")
    hash_only = median_ms(lambda: [hashlib.sha256(line).digest() for line in lines], repeat)
    scan_only = median_ms(lambda: scan_file(spine, collect=False), repeat)
    return {
        "verify_ms": samples[len(samples) // 2],
        "scan_ms": scan_only,
        "hash_only_ms": hash_only,
        "bytes": size,
        "lines": len(lines) - 1,
    }


FULL = {
    "append_rounds": 5,
    "appends": 200,
    "heinzels": 500,
    "events": 200,
    "spine_bytes": 1_000_000,
    "repeat": 15,
}
TINY = {
    "append_rounds": 1,
    "appends": 5,
    "heinzels": 3,
    "events": 20,
    "spine_bytes": 20_000,
    "repeat": 2,
}


def main() -> None:
    size = sizes(__doc__, FULL, TINY)
    with tempfile.TemporaryDirectory(dir=os.environ.get("HZ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        append_us, raw_us, ratio = bench_append(root, size.append_rounds, size.appends)
        print(
            f"append       {append_us:8.1f} µs/line   raw write+fsync {raw_us:8.1f} µs   "
            f"ratio {ratio:.2f}x (target ≤ 1.3x)"
        )
        idx = asyncio.run(bench_index(root, size.heinzels, size.events, 2 * size.repeat))
        print(
            f"reindex      {idx['reindex_s']:8.3f} s  ({idx['reindex_events']} events, "
            f"{idx['spine_bytes'] / 1e6:.1f} MB)   read + orjson + sha256 of every line "
            f"{idx['floor_s']:.3f} s   ratio {idx['reindex_s'] / idx['floor_s']:.1f}x "
            f"(bare read {idx['read_all_s']:.3f} s) (target ≤ 1.0 s)"
        )
        print(
            f"list {size.heinzels:<7} {idx['list_ms']:8.2f} ms   "
            f"bare SQLite SELECT {idx['bare_query_ms']:.2f} ms"
            f"   ratio {idx['list_ms'] / idx['bare_query_ms']:.1f}x (target ≤ 5 ms)"
        )
        ver = asyncio.run(bench_verify(root, size.spine_bytes, size.repeat))
        print(
            f"verify {ver['bytes'] / 1e6:.1f} MB {ver['verify_ms']:8.2f} ms   "
            f"({ver['lines']} lines; chain scan alone "
            f"{ver['scan_ms']:.2f} ms; sha256 of the lines alone {ver['hash_only_ms']:.2f} ms) "
            f"(target ≤ 8 ms)"
        )
        emit(
            {
                "append_ratio": round(ratio, 3),
                "append_us": round(append_us, 1),
                "raw_fsync_us": round(raw_us, 1),
                "list_500_ms": round(idx["list_ms"], 3),
                "list_bare_query_ms": round(idx["bare_query_ms"], 3),
                "reindex_500x200_s": round(idx["reindex_s"], 3),
                "reindex_read_only_s": round(idx["read_all_s"], 3),
                "reindex_floor_s": round(idx["floor_s"], 3),
                "verify_1mb_ms": round(ver["verify_ms"], 3),
                "verify_scan_only_ms": round(ver["scan_ms"], 3),
                "verify_hash_only_ms": round(ver["hash_only_ms"], 3),
            }
        )


if __name__ == "__main__":
    run(main)
