"""The flow between heinzels: a reader's ``needed_by`` on an upstream's approved output.

A reader names when it needs the upstream's output approved (a cron, UTC).
Before each such deadline, while the upstream has a newer draft of that
output waiting for its owner, the owner is nudged (a notice on the
upstream, once per nudge time: ``nudge``, default a day, four hours and an
hour before). At the deadline, if the draft still waits, the owner is told
that the reader goes ahead without it, and so is everyone ``escalate``
names. A reader's turn that finds such a draft waiting parks until the
deadline when it is less than a day away (resumed early by the approval);
otherwise, and at the deadline, it proceeds with the last approved text
(or none, before the first approval): its gather records ``fell_back`` on
that input and the draft it places says so in a first line hz writes (not
in the model's input, which a model would copy into the draft).
Nobody but the upstream's owner and the reader's is told anything.

``docs/flow.md`` is the user's page.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hz_kernel.clock import stamp
from hz_kernel.contracts import duration_seconds
from hz_kernel.contracts.model import DEFAULT_NUDGES
from hz_kernel.tick.schedule import slots_around

#: A reader's turn waits for an upstream's approval only for a deadline this near.
WAIT_S = 86_400
#: A deadline this long past is not announced any more (a kernel that was off for days
#: does not flood the owner with old news when it starts).
LATE_NEWS_S = 86_400


@dataclass(frozen=True)
class Need:
    """One reader input with ``needed_by``: who needs whose output, and when."""

    reader_id: str
    reader: str
    input: str
    upstream: str
    output: str
    needed_by: str
    nudges: tuple[int, ...]
    """Seconds before the deadline, longest first."""
    escalate: tuple[str, ...]


@dataclass(frozen=True)
class FlowNotice:
    """A notice for the upstream heinzel: its key makes it once only."""

    upstream_id: str
    key: str
    notice: str


def needs_of(reader_id: str, reader: str, inputs: Mapping[str, Mapping[str, Any]]) -> list[Need]:
    """The inputs of one reader that carry ``needed_by`` (its contract's ``hz.inputs``)."""
    needs = []
    for name, spec in inputs.items():
        needed_by = spec.get("needed_by")
        args = spec.get("args") or {}
        if not needed_by or spec.get("source") != "heinzel":
            continue
        spelled = spec.get("nudge") or list(DEFAULT_NUDGES)
        needs.append(
            Need(
                reader_id=reader_id,
                reader=reader,
                input=name,
                upstream=str(args.get("heinzel", "")),
                output=str(args.get("output", "")),
                needed_by=str(needed_by),
                nudges=tuple(sorted((duration_seconds(d) for d in spelled), reverse=True)),
                escalate=tuple(spec.get("escalate") or ()),
            )
        )
    return needs


def deadlines(needed_by: str, now: datetime) -> tuple[datetime | None, datetime | None]:
    """The deadline that passed last (at or before ``now``) and the next one."""
    return slots_around(needed_by, now)


def upstream_due_soon(needed_by: str, now: datetime) -> datetime | None:
    """The deadline a reader's turn waits for, when one comes within ``WAIT_S``: the
    upstream's owner may still approve the draft in time. None: go on now."""
    _, upcoming = deadlines(needed_by, now)
    if upcoming is not None and (upcoming - now).total_seconds() <= WAIT_S:
        return upcoming
    return None


def when(moment: datetime) -> str:
    """A deadline as people read it: ``Fri 30 Oct 12:00 UTC``."""
    return moment.strftime("%a %d %b %H:%M UTC")


def fell_back_note(
    upstream: str, output: str, needed_by: str, now: datetime, *, approved: bool = True
) -> str:
    """The line a reader's draft carries when it went on without the newer draft: with the
    text approved before, or with none when nothing was ever approved."""
    passed, upcoming = deadlines(needed_by, now)
    if passed is not None and (upcoming is None or now - passed < upcoming - now):
        due = f"was needed by {when(passed)}"
    else:
        due = f"is needed by {when(upcoming)}" if upcoming else "was needed"
    if not approved:
        return (
            f"Missing input: {upstream}'s {output} {due} and its first draft is not approved "
            "yet; this goes on without it."
        )
    return (
        f"Stale input: {upstream}'s {output} {due} and its newer draft is not approved; "
        "this uses the text approved before."
    )


def flow_notices(
    needs: Iterable[Need],
    waiting: Mapping[tuple[str, str], tuple[str, str | None]],
    known_keys: Mapping[str, set[str]],
    now: datetime,
) -> list[FlowNotice]:
    """The nudges and deadline notices due now that no earlier tick raised.

    ``waiting`` maps (upstream name, output) to the upstream's id and when its
    waiting draft was placed (None: nothing waits). Keys name the draft, not
    the deadline: one waiting draft brings each nudge once and one deadline
    notice, however often ``needed_by`` fires, and nothing more after that
    notice (a clock set back does not nudge again). Of several nudge times
    that have come, only the nearest is raised: a kernel that was off does
    not send the day-before nudge an hour before.
    """
    found: list[FlowNotice] = []
    for need in needs:
        upstream_id, placed = waiting.get((need.upstream, need.output), ("", None))
        if not upstream_id or placed is None:
            continue
        seen = known_keys.get(upstream_id, set())
        passed, upcoming = deadlines(need.needed_by, now)
        late_key = f"flow:late:{need.reader_id}:{need.input}:{placed}"
        if upcoming is not None and late_key not in seen and stamp(upcoming) > placed:
            come = [s for s in need.nudges if now >= upcoming - timedelta(seconds=s)]
            if come:
                nearest = min(come)
                key = f"flow:nudge:{need.reader_id}:{need.input}:{placed}:{nearest}"
                if key not in seen:
                    left = _span(int((upcoming - now).total_seconds()))
                    notice = (
                        f"{need.reader} needs {need.upstream}'s {need.output} approved by "
                        f"{when(upcoming)} (in {left}): its draft waits for you."
                    )
                    found.append(FlowNotice(upstream_id, key, notice))
        late = passed is not None and (now - passed).total_seconds() < LATE_NEWS_S
        if late and passed is not None and placed < stamp(passed) and late_key not in seen:
            notice = (
                f"{need.reader} needed {need.upstream}'s {need.output} approved by "
                f"{when(passed)}; its draft still waits, so {need.reader} goes on with the "
                "text approved before and says so."
            )
            if need.escalate:
                notice += f" Told: {', '.join(need.escalate)}."
            found.append(FlowNotice(upstream_id, late_key, notice))
    return found


def _span(seconds: int) -> str:
    if seconds >= 86_400:
        return f"{seconds // 86_400} d {seconds % 86_400 // 3600} h"
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{max(seconds // 60, 1)} min"
