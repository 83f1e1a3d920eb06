"""What this home last saw of its team heinzels' leases, for the listing to show without git.

The tick's lease step fetches every lease; it records here, per local
heinzel id, the lease in force as it saw it and the team error it met
(``<home>/team/seen.json``, replaced atomically). A listing reads this one
small file, and only when a team heinzel is listed: a home of 500 local
heinzels lists as fast as before, and no listing waits on a remote.

Losing the file costs nothing but the team marks until the next tick. A
heinzel that cannot be placed in a team (no roster handle, no repository)
is told from the settings and its contract at read time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, TypeAdapter

from hz_kernel.clock import stamp
from hz_kernel.config import TeamSettings
from hz_kernel.errors import HzError
from hz_kernel.overview import TeamView
from hz_kernel.store.fsutil import atomic_write, ensure_private_dir, is_regular_file, read_nofollow
from hz_kernel.store.index import IndexQueries
from hz_kernel.team.placement import unplaced

SEEN_NAME = "seen.json"
TEAM_SPECS = "SELECT id, json_extract(hz, '$.team') AS team FROM heinzels WHERE namespace = 'team'"

_log = logging.getLogger("hz.team")


class SeenLease(BaseModel):
    """A lease as the lease step saw it; ``ours``: this home held it (handle and home id)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")
    holder: str
    expires: datetime
    token: int
    renewed: datetime | None = None
    ours: bool = False


class Seen(BaseModel):
    """One team heinzel's last lease step: the repository, the lease, the error it met."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")
    repo: str
    at: datetime
    lease: SeenLease | None = None
    error_code: str | None = None
    error: str | None = None


#: Built on first use: most commands import this module and never read the record.
_SEEN = TypeAdapter(dict[str, Seen], config=ConfigDict(defer_build=True))


def seen_path(home_root: Path) -> Path:
    return home_root / "team" / SEEN_NAME


def read_seen(path: Path) -> dict[str, Seen]:
    """The records by local heinzel id; none when the file is missing or not one hz wrote."""
    if not is_regular_file(path):
        return {}
    try:
        return _SEEN.validate_json(read_nofollow(path))
    except (OSError, ValueError):
        return {}


def write_seen(path: Path, seen: Mapping[str, Seen]) -> None:
    """Replace the record; a disk that refuses it costs the marks until the next tick."""
    try:
        ensure_private_dir(path.parent)
        atomic_write(path, _SEEN.dump_json(dict(seen)), durable=False)
    except OSError as exc:
        _log.info("could not record the team leases in %s: %s", path, exc)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a team heinzel's lease and receipts live, or why it cannot be placed."""

    repo: str | None
    role: Literal["owner", "delegate"] | None
    """None: the home has no ``[team] handle``, so whose role it plays is unknown."""
    error: HzError | None

    @property
    def delegate(self) -> bool:
        return self.role == "delegate"


def placement(spec: Mapping[str, Any], settings: TeamSettings, name: str) -> Placement:
    """A team heinzel's repository and role from its ``hz.team`` and the home's ``[team]``."""
    repo = spec.get("repo") or settings.repo
    role: Literal["owner", "delegate"] | None = None
    if settings.handle is not None:
        role = "delegate" if settings.handle in (spec.get("delegates") or []) else "owner"
    missing = unplaced(name, spec.get("repo"), settings)
    return Placement(repo, role, missing[0] if missing else None)


def team_spec(raw: object) -> dict[str, Any]:
    """A team heinzel's ``hz.team`` as the index holds it (JSON text, or nothing)."""
    spec = orjson.loads(raw) if isinstance(raw, str | bytes) and raw else {}
    return spec if isinstance(spec, dict) else {}


def view(place: Placement, seen: Seen | None, now: datetime) -> TeamView:
    """The team block of a listing row: the placement, and the lease step's record when it
    was of the same repository."""
    role = place.role
    if place.error is not None:
        error = place.error
        return TeamView(repo=place.repo, role=role, error_code=error.code, error=error.one_line())
    if seen is None or seen.repo != place.repo:
        return TeamView(repo=place.repo, role=role)
    lease = seen.lease
    expired = lease is not None and now >= lease.expires
    free = None
    if lease is not None and expired:
        free = "released" if lease.renewed == lease.expires else "expired"
    return TeamView(
        repo=place.repo,
        role=role,
        holder=lease.holder if lease else None,
        expires=stamp(lease.expires) if lease else None,
        token=lease.token if lease else None,
        held_here=lease is not None and lease.ours and not expired,
        free=free,
        seen_at=stamp(seen.at),
        error_code=seen.error_code,
        error=seen.error,
    )


async def fill_team(
    index: IndexQueries,
    rows: list[dict[str, Any]],
    home_root: Path,
    settings: TeamSettings,
    now: datetime,
) -> None:
    """Set ``team`` on the rows of team heinzels; a listing without one asks for nothing."""
    team_rows = [row for row in rows if row.get("namespace") == "team"]
    if not team_rows:
        return
    specs = {r["id"]: team_spec(r["team"]) for r in await index.fetch("", TEAM_SPECS, ())}
    seen = read_seen(seen_path(home_root))
    for row in team_rows:
        place = placement(specs.get(row["id"], {}), settings, row["name"])
        row["team"] = view(place, seen.get(row["id"]), now.astimezone(UTC))
