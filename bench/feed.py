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

    python bench/feed.py [--rate 1000] [--seconds 5] [--clients 10] [--heinzels 500]
                         [--round-trips 1000]

``--tiny`` (the smoke test's run) shrinks every size. The last line is
JSON: ``sse_p50_ms``, ``sse_p99_ms``, ``daemon_rss_mb_500``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
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
from hz_kernel.http_client import HttpClient
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


def free_port_check() -> None:
    """Refuse to run where loopback is not usable (a clear message beats a hang)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))


FULL = {"rate": 1000, "seconds": 5.0, "clients": 10, "heinzels": 500, "round_trips": 1000}
TINY = {"rate": 50, "seconds": 0.2, "clients": 1, "heinzels": 3, "round_trips": 20}


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
    emit(
        {
            "sse_p50_ms": round(p50, 3),
            "sse_p99_ms": round(p99, 3),
            "daemon_rss_mb_500": round(rss_after, 1),
        }
    )


if __name__ == "__main__":
    size = sizes(__doc__, FULL, TINY)
    run(lambda: asyncio.run(main(size)))
