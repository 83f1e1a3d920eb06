"""Agent turn benchmark: a whole durable turn against the same work done by hand.

Run: ``python bench/agent_turn.py [--turns 20]`` (``--tiny`` for the smoke
test's run). The work: read 3 KB of notes, ask the local model once for a
draft of them, and place that draft (a section of several hundred words)
into a Markdown document atomically.

* hz: a heinzel over the notes folder, woken on a long-lived kernel (as the
  daemon runs it); the figure runs from the wake to the end of its turn, so
  it holds the inbox request, the five journalled steps, the body, the
  index, the ledger's effect records and the draft's atomic placement;
* by hand, in the same run: the same I/O without hz — read the notes, call
  the same local model's drafting (``compose_draft``) directly, append as
  many fsynced lines to a journal as hz's turn makes durable writes (counted
  in this run) less the two of the document's atomic write, then write the
  document atomically (temporary file, fsync, rename, fsync of the folder).
  No framework, no index, no feed: the floor of this work done durably.

``agent_turn_ratio`` is hz's median over the hand's (target ≤ 3: LangGraph
doing the same work was measured at 3.8×). The last line is one JSON object
of named figures. Beside it, pydantic-ai's own cost of one answer (the
engine's model step against a model that answers at once): the hand's time
plus that is the least any turn driven through the agent framework can
take (``agent_turn_ratio_lowest_possible``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import FsyncCounter, emit, framework_floor_ms, run, sizes, wake_and_wait

from hz_kernel.adapters.framing import FramedInput
from hz_kernel.adapters.local_model import compose_draft
from hz_kernel.contracts import render_template
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.fsutil import atomic_write

NOTES_BYTES = 3 * 1024


def notes_text(size: int = NOTES_BYTES) -> str:
    """About ``size`` bytes of a week's Markdown notes, one item per line."""
    verbs = ("fixed", "shipped", "reviewed", "planned", "measured", "documented")
    things = (
        "the login flow",
        "search ranking",
        "the checkout page",
        "payment retries",
        "the release notes",
        "the onboarding e-mail",
        "cache warm-up",
        "the billing export",
    )
    lines, n = ["# Week notes"], 0
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(f"- {verbs[n % len(verbs)]} {things[n % len(things)]} (item {n + 1})")
        n += 1
    return "\n".join(lines) + "\n"


def by_hand(notes: Path, document: Path, journal: int, lines: int) -> str:
    """The same work without hz: read, draft with the local model's own drafting, journal
    ``lines`` durable lines, place the draft atomically."""
    text = notes.read_text()
    outcome = compose_draft("section", [FramedInput(name="notes", source="files", content=text)])
    draft = getattr(outcome, "text", "")
    digest = hashlib.sha256(draft.encode()).hexdigest()
    for n in range(lines):
        os.write(journal, f'{{"n":{n},"draft":"{digest}","words":{len(draft.split())}}}\n'.encode())
        os.fsync(journal)
    before = document.read_text() if document.exists() else "# Digest\n"
    head = before.split("<!-- draft -->", 1)[0]
    atomic_write(document, f"{head}<!-- draft -->\n{draft}\n".encode())
    return draft


async def main(turns: int) -> None:
    os.environ.pop("HZ_MODEL_DELAY_MS", None)
    with tempfile.TemporaryDirectory(dir=os.environ.get("HZ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        (root / "docs" / "notes").mkdir(parents=True)
        (root / "docs" / "reports").mkdir()
        notes = root / "docs" / "notes" / "week.md"
        notes.write_text(notes_text())
        (root / "home" / "hz.toml").write_text(f'[documents]\nroot = "{root / "docs"}"\n')
        params = {"name": "digest", "notes": "notes", "document": "reports/digest.md"}
        contract = render_template("digest", {**params, "model": "local"})

        kernel = await Kernel.open(Home.resolve(root / "home"), long_lived=True)
        ours, writes = [], []
        try:
            made = await kernel.new(text=contract)
            await kernel.approve(ref=made.id)
            await wake_and_wait(kernel, made.id)
            with FsyncCounter() as fsyncs:
                for _ in range(turns):
                    fsyncs.count = 0
                    started = time.perf_counter()
                    await wake_and_wait(kernel, made.id)
                    ours.append((time.perf_counter() - started) * 1000)
                    writes.append(fsyncs.count)
        finally:
            await kernel.close()
        placed = (root / "docs" / "reports" / "digest.md").read_text()
        durable = int(statistics.median(writes))

        hand_doc = root / "docs" / "reports" / "by-hand.md"
        journal = os.open(root / "journal.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            draft = by_hand(notes, hand_doc, journal, durable - 2)
            hand = []
            for _ in range(turns):
                started = time.perf_counter()
                by_hand(notes, hand_doc, journal, durable - 2)
                hand.append((time.perf_counter() - started) * 1000)
        finally:
            os.close(journal)
    framework, _ = await framework_floor_ms(max(turns * 2, 8))
    words = len(draft.split())
    assert words > 100 and draft.splitlines()[-1] in placed, "hz did not place the same draft"
    hz_ms, hand_ms = statistics.median(ours), statistics.median(hand)
    ratio = hz_ms / hand_ms
    print(f"hz turn       {hz_ms:8.2f} ms   (read {NOTES_BYTES} B, one local-model call, "
          f"a {words}-word draft placed; {durable} durable writes)")  # fmt: skip
    print(f"by hand       {hand_ms:8.2f} ms   (read, the model's drafting, {durable - 2} "
          "journal lines fsynced, atomic write)")  # fmt: skip
    print(f"ratio         {ratio:8.2f}x   (target ≤ 3x; LangGraph on this work 3.8x)")
    lowest = (hand_ms + framework) / hand_ms
    print(
        f"framework     {framework:8.2f} ms   (pydantic-ai asked once by a model that takes no "
        f"time): with no hz code at all the ratio would be {lowest:.2f}x"
    )
    emit(
        {
            "agent_turn_ratio": round(ratio, 3),
            "agent_turn_ms": round(hz_ms, 3),
            "agent_turn_by_hand_ms": round(hand_ms, 3),
            "agent_turn_draft_words": words,
            "agent_turn_durable_writes": durable,
            "agent_turn_framework_ms": round(framework, 3),
            "agent_turn_ratio_lowest_possible": round(lowest, 3),
        }
    )


if __name__ == "__main__":
    size = sizes(__doc__, {"turns": 20}, {"turns": 2})
    run(lambda: asyncio.run(main(size.turns)))
