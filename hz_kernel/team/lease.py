"""Leases: which home runs a team heinzel, decided by one ref in the team repository.

``refs/hz/lease/<heinzel-id>`` points to a commit whose tree holds
``lease.json``: ``{holder, expires, token, renewed}``. The holder renews it
(same token); anyone else takes it over only once it has expired, with the
next token. ``renewed`` says when the holder last ticked: a slot that fired
after it is one the holder has not decided yet. Every change is a
compare-and-swap push (``--force-with-lease`` with the id this home read),
so of two homes racing for one expired lease exactly one wins and the
other reads the winner's lease on its retry. Expiry is compared with the
clock the caller passes in.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer

from hz_kernel.errors import HzError
from hz_kernel.team.git import git
from hz_kernel.team.lint import lint
from hz_kernel.team.receipts import HANDLE, HEINZEL_ID, MAX_TOKEN
from hz_kernel.team.repo import TeamRepo

LEASE_FILE = "lease.json"
CLAIM_FILE = "claim.json"
#: CAS rounds before giving up; a loser needs two (its push, then reading the winner).
MAX_ATTEMPTS = 5
#: A home's own id (a ULID it mints once), told apart from its handle.
HOME_ID = r"^[0-9A-HJKMNP-TV-Z]{26}$"
SHARED_HANDLE = "HZS120"
HEINZEL_ID_RE = re.compile(HEINZEL_ID)


def lease_ref(heinzel: str) -> str:
    return f"refs/hz/lease/{heinzel}"


def claim_ref(heinzel: str) -> str:
    return f"refs/hz/claim/{heinzel}"


class Lease(BaseModel):
    """Who runs the heinzel until when, and the fencing token of their tenure.

    Fields a newer hz added are dropped on reading (``extra="ignore"``), so
    homes on different versions of hz can share a heinzel; what is written
    is still linted.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")
    holder: str = Field(pattern=HANDLE)
    expires: datetime
    token: int = Field(ge=1, le=MAX_TOKEN)
    renewed: datetime | None = None
    """When the holder last renewed or took the lease (None: written before hz kept it)."""
    owner: str | None = Field(default=None, pattern=HANDLE)
    """Who took the first lease, the heinzel's owner: only its claim gets the lease back."""
    home: str | None = Field(default=None, pattern=HOME_ID)
    """Which home holds it under ``holder``: two homes that share a handle are caught."""

    @field_serializer("expires", "renewed")
    def _utc(self, moment: datetime | None) -> str | None:
        if moment is None:
            return None
        return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")

    def expired(self, now: datetime) -> bool:
        return now >= self.expires


class Claim(BaseModel):
    """The owner's ask, while a delegate holds its heinzel, to have the lease handed back
    (newer fields dropped on reading, as for the lease)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")
    owner: str = Field(pattern=HANDLE)
    at: datetime

    @field_serializer("at")
    def _utc(self, moment: datetime) -> str:
        return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")

    def fresh(self, now: datetime, ttl: timedelta) -> bool:
        """Whether the owner asked within ``ttl``: a claim its owner stopped making lapses."""
        return now < self.at + ttl


class LeaseOutcome(BaseModel):
    """What ``acquire_or_renew`` did; ``lease`` is the lease in force afterwards."""

    model_config = ConfigDict(defer_build=True, frozen=True)
    how: Literal["acquired", "renewed", "took-over", "held-by"]
    lease: Lease

    @property
    def held(self) -> bool:
        return self.how != "held-by"


def read_lease(repo: TeamRepo, heinzel: str, *, fetch: bool = True) -> Lease | None:
    """The heinzel's lease on the remote (after a fetch), or None when it has none."""
    with repo.locked():
        if fetch:
            repo.fetch()
        return mirrored_lease(repo, heinzel)[1]


def acquire_or_renew(
    repo: TeamRepo,
    heinzel: str,
    *,
    handle: str,
    now: datetime,
    ttl: timedelta,
    home: str | None = None,
) -> LeaseOutcome:
    """Renew the lease ``handle`` holds, take one that is absent or expired, or say who holds it.

    Renewal keeps the token; a takeover raises it by one. ``home`` tells this
    home from another that uses the same handle: a valid lease such a home
    holds is refused (HZS120), an expired one taken over like anyone's.
    Raises ``GitFailed`` (HZS105) when the remote cannot be reached, HZS110
    when the lease kept changing under every attempt.
    """
    if not HEINZEL_ID_RE.match(heinzel):
        raise HzError("HZS040", "not a heinzel id", heinzel)
    ref = lease_ref(heinzel)
    with repo.locked():
        for _ in range(MAX_ATTEMPTS):
            repo.fetch()
            old, current = mirrored_lease(repo, heinzel)
            if current is not None and current.holder != handle and not current.expired(now):
                return LeaseOutcome(how="held-by", lease=current)
            shared = (
                current is not None
                and current.holder == handle
                and None not in (current.home, home)
                and current.home != home
            )
            if shared and current is not None and not current.expired(now):
                raise HzError(
                    SHARED_HANDLE,
                    f"another home holds this lease under the handle {handle!r}: give "
                    "each home its own [team] handle in hz.toml",
                    heinzel,
                )
            if current is None:
                how: Literal["acquired", "renewed", "took-over"] = "acquired"
                token, owner = 1, handle
            elif current.holder == handle and not shared:
                how, token, owner = "renewed", current.token, current.owner
            elif current.token >= MAX_TOKEN:
                message = "the lease's token cannot grow any further: it is not hz's"
                raise HzError("HZS109", message, ref)
            else:
                how, token, owner = "took-over", current.token + 1, current.owner
            lease = _new_lease(handle, now, now + ttl, token, owner=owner, home=home)
            commit = _commit(repo, ref, LEASE_FILE, lease, now=now)
            if repo.push([f"{commit}:{ref}"], {ref: old}):
                repo.set_mirror(ref, commit)
                return LeaseOutcome(how=how, lease=lease)
    raise HzError("HZS110", f"the lease kept changing over {MAX_ATTEMPTS} attempts", heinzel)


def release(repo: TeamRepo, heinzel: str, *, handle: str, now: datetime) -> Lease | None:
    """End the lease ``handle`` holds now (same token), for the owner to take over.

    Returns the lease in force afterwards; someone else's lease is left as
    it is. The release marks ``renewed`` too: every slot that fired until
    now was this holder's to decide, and it decided to leave them.
    """
    ref = lease_ref(heinzel)
    with repo.locked():
        for _ in range(MAX_ATTEMPTS):
            repo.fetch()
            old, current = mirrored_lease(repo, heinzel)
            if current is None or current.holder != handle or current.expired(now):
                return current
            lease = current.model_copy(
                update={
                    "expires": now.replace(microsecond=0),
                    "renewed": now.replace(microsecond=0),
                }
            )
            commit = _commit(repo, ref, LEASE_FILE, lease, now=now)
            if repo.push([f"{commit}:{ref}"], {ref: old}):
                repo.set_mirror(ref, commit)
                return lease
    raise HzError("HZS110", f"the lease kept changing over {MAX_ATTEMPTS} attempts", heinzel)


def claim(repo: TeamRepo, heinzel: str, *, handle: str, now: datetime) -> None:
    """Ask the delegate holding the heinzel to hand it back (the owner, each tick it waits).

    Only the owner writes its claim; a push that loses to an earlier one of
    its own is left to the next tick.
    """
    ref = claim_ref(heinzel)
    try:
        document = Claim(owner=handle, at=now.replace(microsecond=0))
    except ValidationError:
        raise HzError("HZS112", "not a roster handle (a-z, 0-9, '.', '_', '-')", handle) from None
    with repo.locked():
        old = repo.mirrored(ref)
        commit = _commit(repo, ref, CLAIM_FILE, document, now=now)
        if repo.push([f"{commit}:{ref}"], {ref: old}):
            repo.set_mirror(ref, commit)


def mirrored_claim(repo: TeamRepo, heinzel: str) -> Claim | None:
    """The owner's claim at the last fetch, or None (none, or not a claim: then none counts)."""
    sha = repo.mirrored(claim_ref(heinzel))
    raw = repo.show(f"{sha}:{CLAIM_FILE}") if sha is not None else None
    if raw is None:
        return None
    try:
        return Claim.model_validate_json(raw)
    except ValidationError:
        return None


def _new_lease(
    handle: str,
    now: datetime,
    expires: datetime,
    token: int,
    *,
    owner: str | None,
    home: str | None,
) -> Lease:
    try:
        return Lease(
            holder=handle,
            expires=expires.replace(microsecond=0),
            token=token,
            renewed=now.replace(microsecond=0),
            owner=owner,
            home=home,
        )
    except ValidationError:
        raise HzError("HZS112", "not a roster handle (a-z, 0-9, '.', '_', '-')", handle) from None


def mirrored_lease(repo: TeamRepo, heinzel: str) -> tuple[str | None, Lease | None]:
    """The lease ref's commit at the last fetch and the lease it holds."""
    sha = repo.mirrored(lease_ref(heinzel))
    if sha is None:
        return None, None
    raw = repo.show(f"{sha}:{LEASE_FILE}")
    try:
        return sha, Lease.model_validate_json(raw or b"")
    except ValidationError:
        raise HzError("HZS109", "the lease ref does not hold a lease", lease_ref(heinzel)) from None


def _commit(repo: TeamRepo, ref: str, name: str, model: Lease | Claim, *, now: datetime) -> str:
    """A parentless commit whose tree holds ``model`` as the one file ``name``."""
    document = model.model_dump(mode="json")
    lint(document, ref)
    blob = repo.blob(orjson.dumps(document, option=orjson.OPT_SORT_KEYS))
    tree = git(repo.git_dir, "mktree", stdin=f"100644 blob {blob}\t{name}\n".encode())
    message = (
        f"hz: lease token {model.token}"
        if isinstance(model, Lease)
        else f"hz: claim by {model.owner}"
    ).encode()
    done = git(
        repo.git_dir,
        "commit-tree",
        "--no-gpg-sign",
        tree.stdout.decode().strip(),
        stdin=message,
        moment=now,
    )
    return done.stdout.decode().strip()
