"""A reindex folds a spine into the same rows the writer's line-by-line updates left.

Random sequences from the vocabulary, with small pools of turns, drafts,
questions, amendments and lessons so events meet the rows of earlier ones
(a draft placed twice, decided, placed again; a turn finished that never
started). The index the writer kept must equal the one a reindex builds,
and each ``pending_*`` column must name what its rows say is pending.
"""

from __future__ import annotations

import asyncio
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.index import ALL_TABLES
from hz_kernel.vocabulary import (
    AmendmentDeclined,
    AmendmentProposed,
    ApprovalObserved,
    AttemptRetry,
    AttemptStarted,
    ContractAmended,
    ContractApproved,
    DraftPlaced,
    DraftRejected,
    DraftSuperseded,
    EventData,
    HeinzelPaused,
    HeinzelRenamed,
    HeinzelRetired,
    HeinzelUnpaused,
    HeinzelUnretired,
    LessonDismissed,
    LessonRecorded,
    NoticeRaised,
    QuestionAnswered,
    QuestionAsked,
    StepDone,
    SummaryWritten,
    TurnFinished,
    TurnRequested,
    TurnResumed,
    TurnSkipped,
    TurnStarted,
    TurnSteered,
    TurnWaiting,
    Usage,
)

#: (payload, turn, key) of one line; the heinzel id is filled in when it is written.
Line = tuple[EventData, str | None, str | None]

START = datetime(2026, 10, 1, 15, 0, tzinfo=UTC)

turns = st.sampled_from([None, "01JTURN0000000000000000001", "01JTURN0000000000000000002"])
drafts = st.sampled_from(["d1", "d2", "d3"])
questions = st.sampled_from(["q1", "q2"])
proposals = st.sampled_from(["p1", "p2"])
lessons = st.sampled_from(["L1", "L2"])
slots = st.sampled_from(["2026-10-01T15:00", "2026-10-02T15:00", "not-a-slot"])
requests = st.lists(st.sampled_from(["r1", "r2"]), max_size=2, unique=True)
steps = st.sampled_from(["gather", "think", "outcome", "act"])
usd = st.sampled_from([0.0, 0.25, 1.5])


def _line(payload: EventData, turn: str | None = None, key: str | None = None) -> Line:
    return payload, turn, key


LINES: st.SearchStrategy[Line] = st.one_of(
    st.builds(lambda n: _line(HeinzelRenamed(name=f"n{n}", previous="x")), st.integers(0, 2)),
    st.sampled_from([HeinzelPaused(), HeinzelUnpaused(), HeinzelRetired(), HeinzelUnretired()]).map(
        _line
    ),
    st.builds(
        lambda v: _line(ContractApproved(version=v, fingerprint="f" * 64)), st.integers(1, 3)
    ),
    st.builds(
        lambda p: _line(AmendmentProposed(proposal=p, by="heinzel", fingerprint="a" * 64)),
        proposals,
    ),
    st.builds(lambda p: _line(AmendmentDeclined(proposal=p)), proposals),
    st.builds(
        lambda p, v: _line(ContractAmended(version=v, fingerprint="b" * 64, proposal=p)),
        st.one_of(st.none(), proposals),
        st.integers(2, 4),
    ),
    st.builds(
        lambda t, slot, ids, cause: _line(
            TurnStarted(cause=cause, keys=[f"@{slot}"], contract_version=1, request_ids=ids),
            t,
            f"@{slot}",
        ),
        turns,
        slots,
        requests,
        st.sampled_from(["schedule", "asked"]),
    ),
    st.builds(
        lambda t, step: _line(
            StepDone(step=step, report="ok", inputs=[{"name": "merged", "fingerprint": "c"}]),
            t,
        ),
        turns,
        steps,
    ),
    st.builds(
        lambda t, n: _line(AttemptStarted(step="think", attempt=n, model="m"), t),
        turns,
        st.integers(1, 3),
    ),
    st.builds(
        lambda t: _line(AttemptRetry(step="think", attempt=2, delay_ms=5, error="e"), t), turns
    ),
    st.builds(lambda t: _line(TurnWaiting(step="act", on={"answer": "q1"}), t), turns),
    st.builds(
        lambda t, by: _line(TurnResumed(woken_by=by), t),
        turns,
        st.sampled_from(["restart", "answer"]),
    ),
    st.builds(
        lambda t, r: _line(TurnSteered(request_id=r, hash="h"), t),
        turns,
        st.sampled_from(["r1", "r2"]),
    ),
    st.builds(
        lambda r, slot: _line(TurnRequested(cause="asked", key=f"@{slot}", request_id=r)),
        st.one_of(st.none(), st.sampled_from(["r1", "r2"])),
        slots,
    ),
    st.builds(
        lambda t, cost: _line(
            TurnFinished(disposition="drafted", causes=["schedule"], usd=cost, report="done"), t
        ),
        turns,
        usd,
    ),
    st.builds(
        lambda t, slot: _line(
            TurnSkipped(causes=["schedule"], keys=[f"@{slot}"], reason="nothing-moved"), t
        ),
        turns,
        slots,
    ),
    st.builds(lambda cost: _line(Usage(purpose="summary", usd=cost)), usd),
    st.builds(
        lambda t, k: _line(
            DraftPlaced(key=k, asset="doc:r.md", hash="h", size=1, contract_version=1), t, k
        ),
        turns,
        drafts,
    ),
    st.builds(lambda k: _line(DraftSuperseded(key=k)), drafts),
    st.builds(lambda k: _line(DraftRejected(key=k)), drafts),
    st.builds(lambda k: _line(ApprovalObserved(key=k, share_changed=0.1, output_fp="o")), drafts),
    st.builds(lambda k: _line(LessonRecorded(lesson_id=k, lesson="short")), lessons),
    st.builds(lambda k: _line(LessonDismissed(lesson_id=k)), lessons),
    st.builds(lambda t, k: _line(QuestionAsked(key=k, question="which?"), t), turns, questions),
    st.builds(
        lambda t, k: _line(QuestionAnswered(key=k, request_id="r1", hash="h"), t),
        turns,
        questions,
    ),
    st.builds(lambda k: _line(NoticeRaised(key=k, notice="look")), st.sampled_from(["n1", "n2"])),
    st.just(_line(SummaryWritten(asset="doc:r.md", wants="w", covers_through_seq=1))),
)


async def _dump(kernel: Kernel) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for table in ALL_TABLES:
        order = ", ".join(table.key)
        out[table.name] = await kernel.index.fetch(
            table.name, f"SELECT * FROM {table.name} ORDER BY {order}"
        )
    feed = await kernel.index.fetch(
        "",
        "SELECT pos, heinzel, seq, offset FROM feed JOIN feed_spine ON spine = feed_spine.id "
        "ORDER BY pos",
    )
    return {**out, "feed": feed}


def _newest_pending(rows: list[dict[str, Any]], key: str) -> str | None:
    pending = [r for r in rows if r["status"] == "pending"]
    return max(pending, key=lambda r: r["seq"])[key] if pending else None


async def _written_then_rebuilt(root: Path, lines: list[Line]) -> None:
    home = Home.resolve(root, create=True)
    kernel = await Kernel.open(home)
    try:
        heinzel_id = await kernel.create_heinzel("fold")
        async with kernel.holding(heinzel_id) as held:
            for n, (payload, turn, key) in enumerate(lines, start=1):
                own = f"{heinzel_id}{key}" if key and key.startswith("@") else key
                if isinstance(payload, TurnStarted | TurnSkipped):
                    payload = payload.model_copy(
                        update={"keys": [f"{heinzel_id}{k}" for k in payload.keys]}
                    )
                await held.append(payload, turn=turn, key=own, ts=START + timedelta(hours=7 * n))
        written = await _dump(kernel)
        report = await kernel.reindex()
        rebuilt = await _dump(kernel)
    finally:
        await kernel.close()
    assert report.damaged == []
    assert rebuilt == written
    (row,) = rebuilt["heinzels"]
    assert row["pending_draft"] == _newest_pending(rebuilt["drafts"], "key")
    assert row["pending_question"] == _newest_pending(rebuilt["questions"], "key")
    assert row["pending_amendment"] == _newest_pending(rebuilt["amendments"], "proposal")


@settings(max_examples=60, deadline=None)
@given(st.lists(LINES, min_size=1, max_size=30))
def test_a_reindex_folds_the_rows_the_writer_kept(lines: list[Line]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_written_then_rebuilt(Path(tmp) / "home", lines))
