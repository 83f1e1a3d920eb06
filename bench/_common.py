"""Helpers shared by the benchmarks: sizes, timing, realistic spines written fast, the JSON line."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from ulid import ULID

from hz_kernel.engine.attempts import run_model_step, user_message
from hz_kernel.engine.wakes import request_key
from hz_kernel.kernel import Kernel
from hz_kernel.observe import Observation
from hz_kernel.store.envelope import GENESIS, Event, encode, line_hash
from hz_kernel.store.fsutil import ensure_private_dir
from hz_kernel.vocabulary import (
    ContractApproved,
    DraftPlaced,
    EventData,
    HeinzelCreated,
    StepDone,
    TurnFinished,
    TurnStarted,
)

#: How long one turn of the local model may take before the run gives up (it never hangs).
TURN_TIMEOUT_S = 120.0


def sizes(
    doc: str | None, full: dict[str, int | float], tiny: dict[str, int | float]
) -> argparse.Namespace:
    """The run's sizes: ``full`` by default, ``tiny`` with ``--tiny`` (the smoke test's run).

    Each size is also an option of its own (``--heinzels 50``), which wins over both.
    """
    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument(
        "--tiny", action="store_true", help="tiny sizes: checks it runs, measures nothing"
    )
    for name, value in full.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=None)
    args = parser.parse_args()
    for name in full:
        if getattr(args, name) is None:
            setattr(args, name, (tiny if args.tiny else full)[name])
    return args


def run(main: Callable[[], object]) -> None:
    """Run a benchmark and always end the process.

    On any failure the traceback is printed and the process exits 1 at once:
    a thread the failed run left open (an index connection that was never
    closed) must not keep it alive, as it once kept ``bench/turn.py``.
    """
    try:
        main()
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def turn_events(heinzel_id: str, n: int) -> list[tuple[EventData, str | None, str | None]]:
    """A realistic sequence of ``n`` events: created, approved, then whole turns."""
    events: list[tuple[EventData, str | None, str | None]] = [
        (HeinzelCreated(name=f"h-{heinzel_id[-6:].lower()}"), None, None),
        (ContractApproved(version=1, fingerprint="c" * 64), None, None),
    ]
    day = 0
    while len(events) < n:
        day += 1
        turn = str(ULID())
        key = f"{heinzel_id}@2026-{1 + day // 28:02d}-{1 + day % 28:02d}T15:00"
        events.append((TurnStarted(cause="schedule", keys=[key], contract_version=1), turn, key))
        inputs = [{"name": "merged", "fingerprint": "a" * 64, "size": 4096}]
        events.append((StepDone(step="gather", inputs=inputs), turn, None))
        events.append(
            (StepDone(step="think", output_hash="b" * 64, output_size=2048, tokens=900), turn, None)
        )
        events.append(
            (StepDone(step="outcome", outcome="draft", report="drafted 12 lines"), turn, None)
        )
        draft_key = f"{heinzel_id}@v1@{key.rsplit('@', 1)[1]}@doc:reports/weekly.md#checkout"
        events.append(
            (
                DraftPlaced(
                    key=draft_key,
                    asset="doc:reports/weekly.md#checkout",
                    hash="d" * 64,
                    size=2048,
                    contract_version=1,
                ),
                turn,
                draft_key,
            )
        )
        events.append((StepDone(step="act"), turn, None))
        events.append(
            (
                TurnFinished(
                    disposition="drafted",
                    causes=["schedule"],
                    usd=0.31,
                    tokens=900,
                    duration_ms=8000,
                    report="drafted 12 lines",
                ),
                turn,
                None,
            )
        )
    return events[:n]


def write_spine_fast(
    heinzel_dir: Path, events: list[tuple[EventData, str | None, str | None]]
) -> int:
    """Write a valid chained spine in one go (no per-line fsync: this is set-up, not measure)."""
    ensure_private_dir(heinzel_dir)
    prev, lines = GENESIS, []
    for seq, (payload, turn, key) in enumerate(events, start=1):
        line = encode(payload, seq=seq, prev=prev, turn=turn, key=key)
        lines.append(line)
        prev = line_hash(line)
    data = b"\n".join(lines) + b"\n"
    (heinzel_dir / "session.jsonl").write_bytes(data)
    return len(data)


async def wake_and_wait(kernel: Kernel, heinzel_id: str) -> list[Event]:
    """Wake the heinzel and return its turn's events once the turn (and its task) has ended.

    The wake's own request id names the turn: its ``turn.started`` carries
    that request's key. A turn that fails, or outlasts ``TURN_TIMEOUT_S``,
    raises instead of leaving the benchmark waiting.
    """
    request_id = str(ULID())
    key = request_key(heinzel_id, request_id)
    turn: list[str] = []
    events: list[Event] = []

    def watch(seen: Observation) -> None:
        event = seen.event
        if event is None or seen.heinzel != heinzel_id:
            return
        if event.kind == "turn.started" and event.key == key and event.turn:
            turn.append(event.turn)
        if turn and event.turn == turn[0]:
            events.append(event)

    kernel.observers.append(watch)
    try:
        await kernel.wake(ref=heinzel_id, request_id=request_id)
        if kernel.tasks:
            _, late = await asyncio.wait(set(kernel.tasks), timeout=TURN_TIMEOUT_S)
            if late:
                raise TimeoutError(f"the turn of request {request_id} ran over {TURN_TIMEOUT_S} s")
    finally:
        kernel.observers.remove(watch)
    if not any(e.kind == "turn.finished" for e in events):
        problems = "; ".join(w.one_line() for w in kernel.warnings) or "no warning recorded"
        raise RuntimeError(f"the turn of request {request_id} did not finish ({problems})")
    return events


class FsyncCounter:
    """Counts this process's fsyncs and the seconds spent in them while installed:
    ``with FsyncCounter() as fsyncs``, then ``fsyncs.count`` and ``fsyncs.seconds`` (set both
    to 0 to start a new count)."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self._real = os.fsync

    def _fsync(self, fd: int) -> None:
        self.count += 1
        started = time.perf_counter()
        self._real(fd)
        self.seconds += time.perf_counter() - started

    def __enter__(self) -> FsyncCounter:
        os.fsync = self._fsync
        return self

    def __exit__(self, *exc: object) -> None:
        os.fsync = self._real


async def answer_at_once(_: object, info: AgentInfo) -> Any:
    """A model that answers "nothing" at once: the framework's part of a call, no model's."""
    tool = next(t for t in info.output_tools if t.name == "nothing")
    yield {0: DeltaToolCall(name=tool.name, json_args='{"report": "nothing moved"}')}


async def quiet(*_: object) -> None:
    """A hook that does nothing (a model step's ``on_attempt`` and ``on_chunk``)."""
    return None


async def framework_floor_ms(rounds: int) -> tuple[float, float]:
    """Median time of one think step's model call when the model itself takes no time, and
    of its part before the request is sent.

    It runs the engine's own ``run_model_step`` (a streamed request through
    pydantic-ai with the outcome tools, the answer validated) against a model
    that answers "nothing" at once: what asking any model costs in the
    framework alone, before hz journals anything.
    The part before the request (up to the hook where a turn records
    ``attempt.started``) is what a turn's measured overhead holds of it; the
    rest falls in the model's time.
    """

    asked: list[float] = []

    async def mark(_: object) -> None:
        asked.append(time.perf_counter())

    model = FunctionModel(stream_function=answer_at_once)
    whole, before = [], []
    for n in range(rounds + 5):
        asked.clear()
        started = time.perf_counter()
        await run_model_step(
            model=model,
            instructions="Keep the digest true.",
            messages=[user_message("Anything to do?")],
            on_attempt=mark,
            on_chunk=quiet,
        )
        if n >= 5:
            whole.append((time.perf_counter() - started) * 1000)
            before.append((asked[0] - started) * 1000)
    return statistics.median(whole), statistics.median(before)


def emit(figures: dict[str, float | int | bool]) -> None:
    print(json.dumps(figures, sort_keys=True))
