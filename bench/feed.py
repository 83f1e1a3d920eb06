"""The daemon's feed under load, and its memory with 500 heinzels.

Starts a real daemon (``hz daemon start``) on a throwaway home holding 500
spines, with the bench-only knob ``HZ_BENCH_FEED=1`` that lets
``POST /v1/bench/feed`` emit synthetic observations through the kernel's
observers. Ten clients follow the feed through ``HttpClient.subscribe``
while it emits 1,000 items a second; each item carries its emission time,
so the clients measure append-to-receipt latency. Figures are printed
beside baselines taken in the same run, because only ratios travel between
machines: a bare loopback HTTP round trip (a minimal asyncio server) for
latency, and a daemon on an empty home for memory.

Then the restart: the same clients follow the daemon, it is SIGKILLed,
``--missed`` spine events are appended to its heinzels while none runs, and
a new daemon is started. Each client resubscribes to the new daemon with
its last position; the figure is the time from the new daemon serving
until every client has received every missed event (target ≤ 1 s), and
each client must have received exactly those (no gap, no duplicate).

    python bench/feed.py [--rate 1000] [--seconds 5] [--clients 10] [--heinzels 500]
                         [--round-trips 1000] [--missed 1000]

``--tiny`` (the smoke test's run) shrinks every size. The last line is
JSON: ``sse_p50_ms``, ``sse_p99_ms``, ``daemon_rss_mb_500``,
``reconnect_caught_up_ms``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from _common import emit, run, sizes
from ulid import ULID

from hz_kernel.daemon.protocol import BENCH_FEED_PATH, PROTOCOL_HEADER, PROTOCOL_VERSION, Discovery
from hz_kernel.http_client import FeedLost, HttpClient
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import HeinzelCreated, StepDone

HZ = [sys.executable, "-m", "hz_kernel.cli"]


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def make_home(root: Path, heinzels: int) -> Path:
    root.mkdir(parents=True, mode=0o700)
    for index in range(heinzels):
        with SpineWriter.open(root / "heinzel" / f"hz-{ULID()}") as writer:
            writer.append(HeinzelCreated(name=f"bench-{index}"))
            writer.append(StepDone(step="gather"))
    return root


def start_daemon(home: Path) -> Discovery:
    env = {**os.environ, "HZ_HOME": str(home), "HZ_BENCH_FEED": "1"}
    done = subprocess.run(
        [*HZ, "daemon", "start"], env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return Discovery.model_validate_json((home / "daemon.json").read_bytes())


def stop_daemon(home: Path) -> None:
    env = {**os.environ, "HZ_HOME": str(home)}
    subprocess.run([*HZ, "daemon", "stop"], env=env, capture_output=True, timeout=60)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


# -- the baseline: a bare loopback HTTP round trip -------------------------------------------


def _bare_server(port_out: multiprocessing.connection.Connection) -> None:
    """A minimal keep-alive HTTP responder: no framework, no routing, no auth."""
    reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nok"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(reply)
                await writer.drain()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port_out.send(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    with contextlib.suppress(asyncio.IncompleteReadError):
        asyncio.run(main())


async def bare_round_trips(count: int) -> list[float]:
    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(target=_bare_server, args=(send,), daemon=True)
    server.start()
    try:
        port = receive.recv()
        samples: list[float] = []
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", trust_env=False) as c:
            for _ in range(count):
                started = time.perf_counter()
                await c.get("/")
                samples.append((time.perf_counter() - started) * 1000)
        return samples
    finally:
        server.terminate()
        server.join()


# -- the feed --------------------------------------------------------------------------------


async def follow_feed(found: Discovery, total: int, latencies: list[float]) -> None:
    async with HttpClient(found) as client:
        seen = 0
        async for item in client.subscribe():
            if item.heinzel != "bench" or item.body is None:
                continue
            latencies.append((time.time_ns() - item.body["t_ns"]) / 1e6)
            seen += 1
            if seen == total:
                return


def _follower(found_json: str, total: int, out: multiprocessing.connection.Connection) -> None:
    """One reader in a process of its own, as a cockpit window would be."""
    latencies: list[float] = []
    asyncio.run(follow_feed(Discovery.model_validate_json(found_json), total, latencies))
    out.send(latencies)


async def feed_latency(found: Discovery, clients: int, rate: int, seconds: float) -> list[float]:
    total = int(rate * seconds)
    pipes = [multiprocessing.Pipe(duplex=False) for _ in range(clients)]
    followers = [
        multiprocessing.Process(target=_follower, args=(found.model_dump_json(), total, send))
        for _, send in pipes
    ]
    for follower in followers:
        follower.start()
    headers = {"authorization": f"Bearer {found.token}", PROTOCOL_HEADER: str(PROTOCOL_VERSION)}
    async with HttpClient(found) as probe:
        while (await probe.health()).feed_connections < clients:
            await asyncio.sleep(0.05)
    async with httpx.AsyncClient(base_url=found.address, trust_env=False) as raw:
        emitted = await raw.post(
            BENCH_FEED_PATH,
            json={"count": total, "rate": rate},
            headers=headers,
            timeout=seconds * 10 + 30,
        )
        emitted.raise_for_status()
    loop = asyncio.get_running_loop()
    per_client = [await loop.run_in_executor(None, receive.recv) for receive, _ in pipes]
    for follower in followers:
        follower.join()
    warmup = min(total // 10, rate // 2)
    return [ms for samples in per_client for ms in samples[warmup:]]


# -- the restart ------------------------------------------------------------------------------


async def _follow_across_restart(
    found: Discovery, pipe: multiprocessing.connection.Connection
) -> None:
    """Follow until the daemon dies, resume on the one the parent names, report the catch-up."""
    async with HttpClient(found) as client:
        reading = client.subscribe()
        with contextlib.suppress(FeedLost):
            async for _ in reading:
                pass
        position, generation = client.feed_position, client.feed_generation
    new_found, edge = pipe.recv()
    got: list[tuple[str, int]] = []
    async with HttpClient(Discovery.model_validate_json(new_found)) as client:
        async for item in client.subscribe(after=position, generation=generation):
            if item.event is not None:
                got.append((item.heinzel, item.event["seq"]))
            if item.seq >= edge:
                break
    pipe.send((time.time(), got))


def _restart_follower(found_json: str, pipe: multiprocessing.connection.Connection) -> None:
    asyncio.run(_follow_across_restart(Discovery.model_validate_json(found_json), pipe))


def append_missed(home: Path, count: int) -> set[tuple[str, int]]:
    """``count`` events on the home's spines, written with no daemon and no index."""
    heinzels = sorted((home / "heinzel").glob("hz-*"))[:50]
    written: set[tuple[str, int]] = set()
    writers = [SpineWriter.open(path) for path in heinzels]
    try:
        for n in range(count):
            writer = writers[n % len(writers)]
            event = writer.append(StepDone(step="think"))
            written.add((writer.path.parent.name, event.seq))
    finally:
        for writer in writers:
            writer.close()
    return written


async def reconnect_after_restart(home: Path, found: Discovery, clients: int, missed: int) -> float:
    """Seconds from the new daemon serving until every client has every missed event."""
    pipes = [multiprocessing.Pipe() for _ in range(clients)]
    followers = [
        multiprocessing.Process(target=_restart_follower, args=(found.model_dump_json(), child))
        for _, child in pipes
    ]
    loop = asyncio.get_running_loop()
    async with HttpClient(found) as probe:
        baseline = (await probe.health()).feed_connections
        for follower in followers:
            follower.start()
        while (await probe.health()).feed_connections < baseline + clients:
            await asyncio.sleep(0.05)
    os.kill(found.pid, signal.SIGKILL)
    while Path(f"/proc/{found.pid}").exists() and not _zombie(found.pid):
        await asyncio.sleep(0.01)
    written = append_missed(home, missed)
    new_found = start_daemon(home)
    serving = time.time()
    async with HttpClient(new_found) as probe:
        edge = (await probe.health()).edge
    for parent, _ in pipes:
        parent.send((new_found.model_dump_json(), edge))
    reports = [await loop.run_in_executor(None, parent.recv) for parent, _ in pipes]
    for follower in followers:
        follower.join()
    for _, got in reports:
        if len(got) != len(set(got)) or set(got) != written:
            raise SystemExit(f"a client resumed with {len(got)} events, expected {len(written)}")
    return max(done for done, _ in reports) - serving


def _zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return True


def free_port_check() -> None:
    """Refuse to run where loopback is not usable (a clear message beats a hang)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))


FULL = {
    "rate": 1000,
    "seconds": 5.0,
    "clients": 10,
    "heinzels": 500,
    "round_trips": 1000,
    "missed": 1000,
}
TINY = {"rate": 50, "seconds": 0.2, "clients": 1, "heinzels": 3, "round_trips": 20, "missed": 20}


async def main(args: argparse.Namespace) -> None:
    free_port_check()
    with tempfile.TemporaryDirectory(prefix="hz-bench-feed-") as scratch:
        empty = make_home(Path(scratch) / "empty", 0)
        full = make_home(Path(scratch) / "full", args.heinzels)
        try:
            empty_found = start_daemon(empty)
            await asyncio.sleep(0.5)
            rss_empty = rss_mb(empty_found.pid)
            stop_daemon(empty)

            found = start_daemon(full)
            async with HttpClient(found) as probe:
                assert (await probe.health()).heinzels == args.heinzels
            rss_idle = rss_mb(found.pid)
            bare = await bare_round_trips(args.round_trips)
            latencies = await feed_latency(found, args.clients, args.rate, args.seconds)
            rss_after = rss_mb(found.pid)
            caught_up = await reconnect_after_restart(full, found, args.clients, args.missed)
        finally:
            stop_daemon(full)
            stop_daemon(empty)

    bare_p50, bare_p99 = percentile(bare, 0.5), percentile(bare, 0.99)
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    print(f"feed: {args.clients} clients, {args.rate} items/s for {args.seconds:.0f}s")
    print(f"  samples                {len(latencies):>10}")
    print(f"  bare HTTP round trip   p50 {bare_p50:7.3f} ms   p99 {bare_p99:7.3f} ms  (baseline)")
    print(
        f"  SSE append->receipt    p50 {p50:7.3f} ms   p99 {p99:7.3f} ms  "
        f"(x{p50 / bare_p50:.1f}, x{p99 / bare_p99:.1f}; target p99 <= 50 ms)"
    )
    print(f"  mean {statistics.fmean(latencies):.3f} ms, max {max(latencies):.3f} ms")
    print(f"memory: daemon RSS, empty home            {rss_empty:7.1f} MB  (baseline)")
    print(
        f"        daemon RSS, {args.heinzels} heinzels, idle   {rss_idle:7.1f} MB  "
        f"(x{rss_idle / rss_empty:.2f})"
    )
    print(
        f"        daemon RSS, {args.heinzels} heinzels, after  {rss_after:7.1f} MB  "
        f"(x{rss_after / rss_empty:.2f}; target <= 150 MB)"
    )
    print(
        f"restart: {args.clients} clients resume after {args.missed} missed events   "
        f"{caught_up * 1000:7.1f} ms from the new daemon serving to all caught up "
        f"(target <= 1000 ms)"
    )
    emit(
        {
            "sse_p50_ms": round(p50, 3),
            "sse_p99_ms": round(p99, 3),
            "daemon_rss_mb_500": round(rss_after, 1),
            "reconnect_caught_up_ms": round(caught_up * 1000, 1),
        }
    )


if __name__ == "__main__":
    size = sizes(__doc__, FULL, TINY)
    run(lambda: asyncio.run(main(size)))
