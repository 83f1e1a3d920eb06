"""Turn benchmark: one full turn (local model, a placed draft) minus model time, against fsyncs.

Run: ``python bench/turn.py [--turns 12]`` (``--tiny`` for the smoke test's
run). Beside it, a turn that makes five tool calls (``git_log`` and four
``git_show`` of the local model over a real repository) is timed whole and
in its calls (each ``tool.started`` to its ``tool.finished``). Every
durable write the turn makes (spine lines, body syncs, the document's
atomic write, the source cache, the inbox file) is an ``fsync``; the floor
is the same number of raw write+fsync calls of a spine-sized line on the
same disk, measured in the same run; beside it, the time the turn's own
fsyncs took, since a new file's, a rename's and a directory's fsync costs
more than an append's. Model time is read from the
turn's events (first ``attempt.started`` to the think step's ``step.done``)
and excluded. Target: overhead ≤ 2× the floor. Beside it, the agent
framework's own share: pydantic-ai asked once through the engine's model step
by a model that answers at once; its part before the request falls in the
overhead, so the fsyncs plus that part are the lowest overhead any turn on
this framework can reach (``turn_ratio_lowest_possible``). The last line is
one JSON object of named figures.

Beside them, the turn's durable pieces alone (``turn_durable_only_ratio``):
hz's own spine writer, projection, index, body and atomic document write
making the same durable writes in the engine's order and groups (an index
commit where the engine makes one, the model asked through the engine's model
step inside the model's time), with no wake, admission, context, ledger or
step machinery around them: what a turn costs against the same floor before
any of the engine's own work.

The kernel is long-lived, as the daemon's is: a wake answers before its
turn ends, so each measured wake waits for its turn's background task and
reads the turn's events as the kernel reports them to its observers.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import (
    FsyncCounter,
    answer_at_once,
    emit,
    framework_floor_ms,
    quiet,
    run,
    sizes,
    wake_and_wait,
)
from pydantic_ai.models.function import FunctionModel
from ulid import ULID

from hz_kernel.contracts import render_template
from hz_kernel.engine.attempts import run_model_step, user_message
from hz_kernel.engine.wakes import request_key
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import BodyWriter
from hz_kernel.store.envelope import Event
from hz_kernel.store.fsutil import atomic_write
from hz_kernel.store.inbox import Inbox, InboxRequest
from hz_kernel.store.index import Index, stat_spine
from hz_kernel.store.session import project
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import (
    AttemptStarted,
    ContextPrepared,
    DraftPlaced,
    EffectDone,
    EffectStarted,
    StepDone,
    TurnFinished,
    TurnStarted,
)
from tests.support.homes import World, checkout_repo, digest_contract, make_world


def _model_seconds(events: list[Event]) -> float:
    """Seconds from the turn's first model attempt to its think step's checkpoint."""
    start = next((e for e in events if e.kind == "attempt.started"), None)
    done = next((e for e in events if e.kind == "step.done" and e.data["step"] == "think"), None)
    if start is None or done is None:
        kinds = ", ".join(e.kind for e in events)
        raise RuntimeError(f"the turn never reached the model (its events: {kinds})")
    return (datetime.fromisoformat(done.ts) - datetime.fromisoformat(start.ts)).total_seconds()


def raw_floor_ms(directory: Path, count: int, rounds: int = 5) -> float:
    line = b'{"v":1,"seq":1,"prev":"' + b"0" * 64 + b'"}' + b" " * 230 + b"\n"
    fd = os.open(directory / "raw.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    samples = []
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            for _ in range(count):
                os.write(fd, line)
                os.fsync(fd)
            samples.append((time.perf_counter() - started) * 1000)
    finally:
        os.close(fd)
    return statistics.median(samples)


def _changelog(world: World) -> str:
    """A changelog heinzel over a real repository of five commits: on the local model its
    turn calls ``git_log`` once and ``git_show`` four times (``MAX_SHOWN_COMMITS``)."""
    repo = checkout_repo(world)
    params = {"name": "changes", "repo": str(repo), "document": "reports/CHANGELOG.md"}
    return render_template("changelog", {**params, "model": "local"})


async def tool_turns(world: World, kernel: Kernel, turns: int) -> tuple[float, float, int]:
    """Median wall time of a turn that makes tool calls, of the calls alone, and how many."""
    made = await kernel.new(text=_changelog(world))
    await kernel.approve(ref=made.id)
    totals, tools, calls = [], [], []
    for _ in range(turns):
        started = time.perf_counter()
        events = await wake_and_wait(kernel, made.id)
        totals.append((time.perf_counter() - started) * 1000)
        opened = {e.data["call"]: e for e in events if e.kind == "tool.started"}
        closed = [e for e in events if e.kind == "tool.finished"]
        tools.append(
            sum(
                (
                    datetime.fromisoformat(e.ts) - datetime.fromisoformat(opened[e.data["call"]].ts)
                ).total_seconds()
                * 1000
                for e in closed
            )
        )
        calls.append(len(closed))
    return statistics.median(totals), statistics.median(tools), int(statistics.median(calls))


async def growth(kernel: Kernel, turns: int) -> tuple[float, float, float]:
    """Median wall time of a heinzel's first fifth of ``turns`` turns, its last fifth, and their
    ratio.

    One fresh heinzel runs ``turns`` turns back to back; the figure is the
    median of its turns 400–500 over that of its turns 1–100 (at 500 turns;
    the first and last fifth at any size): what its history costs each turn.
    """
    params = {"name": "growth", "notes": "notes", "document": "reports/growth.md"}
    made = await kernel.new(text=render_template("digest", {**params, "model": "local"}))
    await kernel.approve(ref=made.id)
    samples = []
    for _ in range(turns):
        started = time.perf_counter()
        await wake_and_wait(kernel, made.id)
        samples.append((time.perf_counter() - started) * 1000)
    fifth = max(1, turns // 5)
    early, late = statistics.median(samples[:fifth]), statistics.median(samples[-fifth:])
    return early, late, late / early


async def durable_only(home: Home, heinzel_id: str, world: World, turns: int) -> tuple[float, int]:
    """Median overhead (ms) of a turn made of hz's durable pieces alone, and its durable writes.

    Runs on a heinzel no kernel holds. Each turn admits its request, opens a
    new body, appends the spine lines in the engine's five groups (an index
    commit after the first two and the last), reads the notes, asks the model
    through the engine's model step and places a draft atomically. The model's
    time runs from ``attempt.started`` to the body's outcome record, as the
    engine's turn is measured.
    """
    document, notes = world.reports / "digest.md", sorted(world.notes.glob("*.md"))
    model = FunctionModel(stream_function=answer_at_once)
    heinzel_dir = home.heinzel_dir(heinzel_id)
    writer = SpineWriter.open(heinzel_dir)
    assert writer.opened_scan is not None
    events = writer.opened_scan.events
    projection = project(heinzel_id, heinzel_dir, writer.opened_scan)
    index = await Index.open(home.index_path)

    async def flush(*, indexed: bool) -> None:
        for event in writer.flush():
            events.append(event)
            projection.apply(event)
        if indexed:
            stats = {heinzel_id: stat_spine(writer.path)}
            await index.write([projection], stats, full=False, spines={heinzel_id: events})

    overheads, writes = [], []
    try:
        with FsyncCounter() as fsyncs:
            for _ in range(turns):
                fsyncs.count = 0
                started = time.perf_counter()
                asked = InboxRequest(request_id=str(ULID()), heinzel=heinzel_id, kind="wake")
                Inbox(heinzel_dir).admit(asked, durable=False)
                turn, key = str(ULID()), request_key(heinzel_id, asked.request_id)
                body = BodyWriter(heinzel_dir, turn)
                writer.stage(
                    TurnStarted(cause="asked", keys=[key], contract_version=1),
                    turn=turn,
                    key=key,
                )
                await flush(indexed=True)
                texts = [path.read_text() for path in notes]
                for path, text in zip(notes, texts, strict=True):
                    body.write("input", name=path.name, content=text)
                body.sync()
                writer.stage(StepDone(step="gather"), turn=turn)
                writer.stage(ContextPrepared(model="local", estimate_tokens=900), turn=turn)
                asking = time.perf_counter()
                writer.stage(AttemptStarted(step="think", attempt=1, model="local"), turn=turn)
                await flush(indexed=True)
                await run_model_step(
                    model=model,
                    instructions="Keep the digest true.",
                    messages=[user_message(*texts)],
                    on_attempt=quiet,
                    on_chunk=quiet,
                )
                draft = "\n".join(texts)
                body.write("outcome", outcome={"draft": draft})
                body.sync()
                model_s = time.perf_counter() - asking
                writer.stage(StepDone(step="think", attempts=1), turn=turn)
                await flush(indexed=False)
                effect = f"{turn}:place"
                writer.stage(StepDone(step="outcome", outcome="draft"), turn=turn)
                writer.stage(EffectStarted(key=effect, effect="place_draft"), turn=turn)
                await flush(indexed=False)
                atomic_write(document, f"# Digest\n{draft}\n".encode())
                digest = hashlib.sha256(draft.encode()).hexdigest()
                body.write("draft", hash=digest)
                body.sync()
                writer.stage(EffectDone(key=effect, hash=digest), turn=turn)
                placed = DraftPlaced(
                    key=f"{turn}:draft",
                    asset=document.name,
                    hash=digest,
                    size=len(draft),
                    contract_version=1,
                )
                writer.stage(placed, turn=turn)
                writer.stage(StepDone(step="act"), turn=turn)
                writer.stage(TurnFinished(disposition="drafted", causes=["asked"]), turn=turn)
                await flush(indexed=True)
                body.close()
                overheads.append((time.perf_counter() - started - model_s) * 1000)
                writes.append(fsyncs.count)
    finally:
        writer.close()
        await index.close()
    return statistics.median(overheads), int(statistics.median(writes))


async def main(turns: int, history: int) -> None:
    os.environ.pop("HZ_MODEL_DELAY_MS", None)
    with tempfile.TemporaryDirectory(dir=os.environ.get("HZ_BENCH_DIR")) as tmp:
        world = make_world(Path(tmp))
        kernel = await Kernel.open(Home.resolve(world.home), long_lived=True)
        overheads, totals, models, writes, synced = [], [], [], [], []
        try:
            made = await kernel.new(text=digest_contract())
            await kernel.approve(ref=made.id)
            await wake_and_wait(kernel, made.id)
            tool_total, tool_ms, tool_calls = await tool_turns(world, kernel, turns)
            early, late, growth_ratio = await growth(kernel, history)
            with FsyncCounter() as fsyncs:
                for _ in range(turns):
                    fsyncs.count, fsyncs.seconds = 0, 0.0
                    started = time.perf_counter()
                    events = await wake_and_wait(kernel, made.id)
                    total = time.perf_counter() - started
                    model = _model_seconds(events)
                    totals.append(total * 1000)
                    models.append(model * 1000)
                    overheads.append((total - model) * 1000)
                    writes.append(fsyncs.count)
                    synced.append(fsyncs.seconds * 1000)
        finally:
            await kernel.close()
        durable = int(statistics.median(writes))
        floor = raw_floor_ms(Path(tmp), durable)
        home = Home.resolve(world.home)
        alone, alone_writes = await durable_only(home, made.id, world, max(turns, 5))
        alone_floor = raw_floor_ms(Path(tmp), alone_writes)
    framework, framework_setup = await framework_floor_ms(max(turns * 4, 8))
    lowest = (floor + framework_setup) / floor
    overhead = statistics.median(overheads)
    ratio = overhead / floor
    total_ms, model_ms = statistics.median(totals), statistics.median(models)
    print(f"turn          {total_ms:8.2f} ms   of which model {model_ms:.2f} ms")
    print(f"overhead      {overhead:8.2f} ms   ({durable} durable writes per turn)")
    print(f"fsync floor   {floor:8.2f} ms   ({durable} raw write+fsync of a spine line)")
    print(f"ratio         {ratio:8.2f}x   (target ≤ 2x)")
    print(
        f"its fsyncs    {statistics.median(synced):8.2f} ms   (the turn's own {durable}: "
        "new files, renames and directories cost more than appends to an open file)"
    )
    print(
        f"framework     {framework_setup:8.2f} ms   before the request, of {framework:.2f} ms: "
        "pydantic-ai asked once by a model that takes no time"
    )
    print(f"lowest ratio  {lowest:8.2f}x   (the fsyncs and that part, with no hz code at all)")
    print(
        f"durable only  {alone:8.2f} ms   ({alone_writes} durable writes, "
        f"{alone / alone_floor:.2f}x their floor of {alone_floor:.2f} ms): hz's durable pieces "
        "in the engine's order, no engine around them"
    )
    print(
        f"tool turn     {tool_total:8.2f} ms   ({tool_calls} tool calls, {tool_ms:.2f} ms in them)"
    )
    print(
        f"growth        {growth_ratio:8.2f}x   (turns {history * 4 // 5 + 1}–{history}: "
        f"{late:.2f} ms, turns 1–{max(1, history // 5)}: {early:.2f} ms; target ≤ 1.2x)"
    )
    emit(
        {
            "turn_overhead_ratio": round(ratio, 3),
            "turn_growth_ratio": round(growth_ratio, 3),
            "turn_growth_early_ms": round(early, 3),
            "turn_growth_late_ms": round(late, 3),
            "turn_overhead_ms": round(overhead, 3),
            "turn_total_ms": round(statistics.median(totals), 3),
            "turn_model_ms": round(statistics.median(models), 3),
            "turn_durable_writes": durable,
            "fsync_floor_ms": round(floor, 3),
            "turn_fsync_ms": round(statistics.median(synced), 3),
            "framework_call_ms": round(framework, 3),
            "framework_setup_ms": round(framework_setup, 3),
            "turn_ratio_lowest_possible": round(lowest, 3),
            "turn_durable_only_ms": round(alone, 3),
            "turn_durable_only_writes": alone_writes,
            "turn_durable_only_ratio": round(alone / alone_floor, 3),
            "tool_turn_ms": round(tool_total, 3),
            "tool_turn_calls": tool_calls,
            "tool_calls_ms": round(tool_ms, 3),
        }
    )


if __name__ == "__main__":
    size = sizes(__doc__, {"turns": 12, "history": 500}, {"turns": 2, "history": 10})
    run(lambda: asyncio.run(main(size.turns, size.history)))
