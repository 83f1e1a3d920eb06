"""The flow's pure parts: the reader's line, and which notices are due (``hz_kernel.flow``)."""

from __future__ import annotations

from datetime import UTC, datetime

from hz_kernel.flow import Need, fell_back_note, flow_notices

FRIDAY_NOON = "0 12 * * FRI"
NEED = Need(
    reader_id="hz-r",
    reader="weekly-report",
    input="theo",
    upstream="theo-row",
    output="row",
    needed_by=FRIDAY_NOON,
    nudges=(86_400, 3600),
    escalate=(),
)


def test_the_line_says_whether_older_text_was_used_or_none_at_all() -> None:
    after = datetime(2026, 10, 30, 15, tzinfo=UTC)
    assert fell_back_note("theo-row", "row", FRIDAY_NOON, after) == (
        "Stale input: theo-row's row was needed by Fri 30 Oct 12:00 UTC and its newer draft is "
        "not approved; this uses the text approved before."
    )
    before = datetime(2026, 10, 29, 9, tzinfo=UTC)
    assert fell_back_note("theo-row", "row", FRIDAY_NOON, before, approved=False) == (
        "Missing input: theo-row's row is needed by Fri 30 Oct 12:00 UTC and its first draft is "
        "not approved yet; this goes on without it."
    )


def test_only_the_nearest_nudge_due_is_raised_and_none_when_nothing_waits() -> None:
    an_hour_before = datetime(2026, 10, 30, 11, 30, tzinfo=UTC)
    waiting = {("theo-row", "row"): ("hz-t", "2026-10-29T09:00:00Z")}
    (nudge,) = flow_notices([NEED], waiting, {}, an_hour_before)
    assert nudge.upstream_id == "hz-t" and nudge.key.endswith(":2026-10-29T09:00:00Z:3600")
    assert flow_notices([NEED], waiting, {"hz-t": {nudge.key}}, an_hour_before) == []
    assert flow_notices([NEED], {("theo-row", "row"): ("hz-t", None)}, {}, an_hour_before) == []


def test_old_news_is_not_announced() -> None:
    """A deadline more than a day past says nothing (a kernel back from a long pause)."""
    waiting = {("theo-row", "row"): ("hz-t", "2026-10-20T09:00:00Z")}
    next_monday = datetime(2026, 11, 2, 9, tzinfo=UTC)
    assert [n for n in flow_notices([NEED], waiting, {}, next_monday) if ":late:" in n.key] == []


def test_a_deadline_every_minute_brings_one_nudge_and_one_notice_per_waiting_draft() -> None:
    """Attack pass: ``needed_by: "* * * * *"`` sent two notices a minute for one draft."""
    every_minute = Need(**{**NEED.__dict__, "needed_by": "* * * * *"})
    waiting = {("theo-row", "row"): ("hz-t", "2026-10-30T09:00:00Z")}
    seen: set[str] = set()
    told = []
    for minute in range(1, 30):
        now = datetime(2026, 10, 30, 9, minute, 10, tzinfo=UTC)
        for notice in flow_notices([every_minute], waiting, {"hz-t": seen}, now):
            seen.add(notice.key)
            told.append(notice.key)
    assert [key.split(":")[1] for key in told] == ["nudge", "late"]


def test_no_nudge_after_the_deadline_notice_even_with_the_clock_set_back() -> None:
    waiting = {("theo-row", "row"): ("hz-t", "2026-10-29T09:00:00Z")}
    late = flow_notices([NEED], waiting, {}, datetime(2026, 10, 30, 12, 5, tzinfo=UTC))
    seen = {n.key for n in late}
    assert any(":late:" in key for key in seen)
    for back in (datetime(2026, 10, 30, 9, tzinfo=UTC), datetime(2026, 10, 23, 11, 30, tzinfo=UTC)):
        assert flow_notices([NEED], waiting, {"hz-t": seen}, back) == []
