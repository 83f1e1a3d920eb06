"""Listing heinzels: the index's rows, today's cost, and when each wakes next.

One function serves the kernel's ``heinzel.list`` and a head that lists
before its kernel has loaded (``hz_kernel.client.DeferredClient``), so the
two can never disagree. It needs the index's read side, a schedule clock
and the tick's record of failed heinzels, nothing of the kernel's writing
machinery.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from hz_kernel import overview
from hz_kernel.clock import now_utc, stamp
from hz_kernel.config import TeamSettings
from hz_kernel.errors import HzError, UsageError
from hz_kernel.store.index import IndexQueries
from hz_kernel.team.seen import fill_team
from hz_kernel.tick.schedule import SlotClock

#: States in which a heinzel still wakes by itself (paused, retired and proposed ones do not).
RUNNING_STATES = frozenset({"asleep", "awake", "waiting"})

#: Filled beside the index's columns, from their defaults: today's cost by the query, failures
#: and team leases from the tick's records, the admission queue from the kernel that runs the
#: turns.
_NOT_COLUMNS = {
    name: overview.HeinzelSummary.model_fields[name].default
    for name in ("cost_today", "failure", "queued", "interrupted", "team")
}
_SUMMARY_FIELDS = tuple(overview.HeinzelSummary.model_fields)
_EVERY_FIELD = frozenset(_SUMMARY_FIELDS)


async def list_summaries(
    index: IndexQueries,
    clock: SlotClock,
    *,
    state: str | None = None,
    artifact: str | None = None,
    contract: str | None = None,
    where: dict[str, str] | None = None,
    ids: list[str] | None = None,
    failures: Mapping[str, overview.HeinzelFailure] | None = None,
    queued: Mapping[str, str] | None = None,
    team: tuple[Path, TeamSettings] | None = None,
) -> list[overview.HeinzelSummary]:
    """The summaries that match every filter given, sorted by name, with their failures,
    why a turn of theirs waits for admission (``queued``: heinzel id to reason) and, given
    the home's root and ``[team]`` (``team``), the team block of each team heinzel."""
    name, version = split_contract(contract)
    now = now_utc()
    rows = await index.summary_rows(
        _SUMMARY_FIELDS,
        day=now.date().isoformat(),
        others=_NOT_COLUMNS,
        state=state,
        artifact=artifact,
        contract=name,
        contract_version=version,
        where=where,
        ids=ids,
    )
    fill_next_due(rows, clock, now)
    if failures:
        for row in rows:
            row["failure"] = failures.get(row["id"])
    if queued:
        for row in rows:
            row["queued"] = queued.get(row["id"])
    if team is not None:
        await fill_team(index, rows, *team, now)
    return [_trusted(row) for row in rows]


_new = overview.HeinzelSummary.__new__
_set = object.__setattr__


def _trusted(row: dict[str, Any]) -> overview.HeinzelSummary:
    """A summary of a row the index typed as the model does, made as ``model_construct``
    makes one without its loop over the fields: the index is hz's own and derived, a row
    has every field in the model's order (its ``__dict__`` as validation would make it),
    and whatever leaves the process is validated where it is read (the wire)."""
    summary = _new(overview.HeinzelSummary)
    _set(summary, "__dict__", row)
    _set(summary, "__pydantic_fields_set__", set(_EVERY_FIELD))
    _set(summary, "__pydantic_extra__", None)
    _set(summary, "__pydantic_private__", None)
    return summary


def fill_next_due(rows: list[dict[str, Any]], clock: SlotClock, now: datetime) -> None:
    """When each heinzel wakes next: its next schedule slot, or its wait's end if sooner.

    Computed at read time (the index cannot know the clock); each distinct
    schedule is evaluated once and remembered until it fires.
    """
    for row in rows:
        if row["state"] not in RUNNING_STATES or row["damaged"]:
            continue
        due = []
        if row["schedule"]:
            with contextlib.suppress(HzError):
                upcoming = clock.upcoming(row["schedule"], now)
                if upcoming is not None:
                    due.append(stamp(upcoming))
        if row["state"] == "waiting" and row.get("waiting_until"):
            due.append(row["waiting_until"])
        row["next_due"] = min(due) if due else None


def split_contract(contract: str | None) -> tuple[str | None, int | None]:
    """``NAME`` or ``NAME:VERSION`` (``v`` optional) as a filter's parts."""
    if not contract:
        return None, None
    name, _, version = contract.partition(":")
    if version:
        if not version.lstrip("v").isdigit():
            raise UsageError("HZU021", "a contract filter is NAME or NAME:VERSION", contract)
        return name, int(version.lstrip("v"))
    return name, None
