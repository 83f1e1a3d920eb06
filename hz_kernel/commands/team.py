"""Team heinzels in the tick: the lease before a turn, receipts after it, and ``hz team``.

A heinzel in the ``team`` namespace is known to the other homes of its team
repository by a team id made from its name: the same on every home, whatever
its local id. Each tick, before any turn, this home renews the lease of each
team heinzel it owns, or, as one of its delegates, takes over a lease that
expired (``hz_kernel.team.lease``); a slot whose lease another home holds is
skipped (``held-by``). After the turns, the receipts of what the spines
recorded since the last tick are queued and the outbox is pushed
(``hz_kernel.team.state_branch``). Git runs in a worker thread with the
substrate's timeouts, so the kernel keeps answering while it waits, and an
unreachable remote leaves an owner running on its unexpired lease only and
its receipts queued. See ``docs/team.md``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from ulid import ULID

from hz_kernel import api
from hz_kernel.clock import now_utc, stamp
from hz_kernel.commands.tick import tick_interval
from hz_kernel.contracts.versions import ContractVersions
from hz_kernel.core import KernelCore
from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import atomic_write, ensure_private_dir, store_io
from hz_kernel.store.locks import SpineBusy
from hz_kernel.team.lease import (
    HOME_ID,
    SHARED_HANDLE,
    Lease,
    acquire_or_renew,
    claim,
    mirrored_claim,
    read_lease,
    release,
)
from hz_kernel.team.receipts import (
    AnyReceipt,
    ContractAmendedReceipt,
    TurnFinishedReceipt,
    receipts_from,
)
from hz_kernel.team.repo import TeamRepo
from hz_kernel.team.seen import (
    Seen,
    SeenLease,
    placement,
    read_seen,
    seen_path,
    team_spec,
    write_seen,
)
from hz_kernel.team.state_branch import (
    MAX_RECEIPT,
    RESTORED,
    UNREADABLE,
    ReceiptLog,
    StateBranch,
)
from hz_kernel.tick.report import TickProblem
from hz_kernel.tick.schedule import slot_time
from hz_kernel.tick.wakes import PlannedTurn

TEAM_QUERY = """
SELECT id, name, seq, contract_version, json_extract(hz, '$.team') AS team,
       NOT (COALESCE(paused, 0) OR COALESCE(retired, 0) OR COALESCE(damaged, 0)) AS active
FROM heinzels WHERE namespace = 'team' AND contract_version IS NOT NULL ORDER BY name
"""
#: The lease in force after a member's lease step, and the error the step met.
_LeaseStep = tuple[Lease | None, HzError | None]
CLOCK_SKEW = "HZS125"
DRIFT = "HZS126"
#: How far another home's clock may run ahead of this one's before the tick says so.
CLOCK_TOLERANCE = timedelta(minutes=1)
NOT_HELD = "HZS115"
LEASE_LOST = "HZS121"
_UNREADABLE = f"not a receipt this hz reads, or larger than {MAX_RECEIPT // 1024} KiB"
_CROCKFORD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789ABCDEFGHJKMNPQRSTVWXYZ")


def team_id(name: str) -> str:
    """The id a team heinzel has in its team repository: from its name, the same on every home."""
    digest = hashlib.sha256(f"hz-team:{name}".encode()).digest()
    return "hz-" + base64.b32encode(digest).decode().translate(_CROCKFORD)[:26]


@dataclass(frozen=True, slots=True)
class TeamMember:
    """One team heinzel of this home, with where its lease and receipts live."""

    heinzel: str
    name: str
    team_id: str
    repo: str
    delegate: bool
    seq: int
    active: bool
    version: int
    """The contract version this home runs it under."""


class _Cursor(BaseModel):
    """How far a heinzel's spine has been turned into queued receipts."""

    model_config = ConfigDict(defer_build=True, frozen=True)
    seq: int = Field(default=0, ge=0)
    count: int = Field(default=0, ge=0)


class TeamCommands(KernelCore):
    """Leases and receipts of this home's team heinzels (``hz team status|log``)."""

    _leases: dict[str, Lease]

    @property
    def team_leases(self) -> dict[str, Lease]:
        """Per local heinzel id: the lease in force as this home last saw it."""
        if not hasattr(self, "_leases"):
            self._leases = {}
        return self._leases

    # -- who is in a team --------------------------------------------------------------

    async def team_members(self) -> tuple[list[TeamMember], list[HzError]]:
        """This home's team heinzels, and one error for each that cannot be placed in a team."""
        rows = await self.index.fetch("", TEAM_QUERY, ())
        members: list[TeamMember] = []
        errors: list[HzError] = []
        for row in rows:
            place = placement(team_spec(row["team"]), self.home.settings.team, row["name"])
            if place.error is not None:
                errors.append(place.error)
                continue
            assert place.repo is not None
            members.append(
                TeamMember(
                    heinzel=row["id"],
                    name=row["name"],
                    team_id=team_id(row["name"]),
                    repo=place.repo,
                    delegate=place.delegate,
                    seq=int(row["seq"] or 0),
                    active=bool(row["active"]),
                    version=int(row["contract_version"] or 0),
                )
            )
        return members, errors

    # -- the tick: leases before turns ---------------------------------------------------

    async def team_before_turns(
        self, plan: list[PlannedTurn], now: datetime, ttl: timedelta
    ) -> tuple[list[PlannedTurn], list[TickProblem]]:
        """Renew or take each team heinzel's lease, then keep only the turns this home holds.

        A slot another home holds is skipped (``held-by``, naming it); other
        work of such a heinzel, or of one whose lease is unknown (no remote,
        no lease of ours that is still valid), waits (``held-by``, ``no-lease``).
        """
        members, errors = await self.team_members()
        problems = [_problem(error) for error in errors]
        unplaced = {error.place for error in errors}
        if not members and not errors:
            return plan, problems
        handle = self.home.settings.team.handle
        runs_here: dict[str, Lease | None] = {}
        for member, (lease, error) in await self._lease_steps(members, now, ttl):
            self._team_seen()[member.heinzel] = Seen(
                repo=member.repo,
                at=now,
                lease=_seen(lease, self._ours(lease)) if lease is not None else None,
                error_code=error.code if error is not None else None,
                error=error.one_line() if error is not None else None,
            )
            if lease is not None and lease.holder == handle and not self._ours(lease):
                lease = None  # another home that shares this handle: never ours to run
            if error is not None:
                problems.append(_problem(error, member.name))
            if lease is None:
                self.team_leases.pop(member.heinzel, None)
            else:
                self.team_leases[member.heinzel] = lease
            runs_here[member.heinzel] = lease
        self._keep_seen({m.heinzel for m in members})
        problems += [_problem(error) for error in await asyncio.to_thread(self._drift, members)]
        decided: list[PlannedTurn] = []
        for item in plan:
            if item.name in unplaced and item.action in ("run", "resume"):
                item = item.model_copy(update={"action": "defer", "reason": "no-lease"})
            elif item.heinzel in runs_here and item.action != "defer":
                item = _decided(item, runs_here[item.heinzel], handle, now)
            decided.append(item)
        return decided, problems

    def _team_seen(self) -> dict[str, Seen]:
        """What the lease steps last saw, per local heinzel id (read once from its file)."""
        if not hasattr(self, "_seen_leases"):
            self._seen_leases = read_seen(seen_path(self.home.root))
        return self._seen_leases

    def _keep_seen(self, heinzel_ids: set[str]) -> None:
        """Record what the lease steps saw, for the listing (``hz_kernel.team.seen``)."""
        seen = self._team_seen()
        for gone in set(seen) - heinzel_ids:
            del seen[gone]
        write_seen(seen_path(self.home.root), seen)

    def _drift(self, members: list[TeamMember]) -> list[HzError]:
        """HZS126 for each team heinzel whose newest receipt from another home ran a contract
        this home has no version of, at a higher version: the homes drifted apart, and this
        one would run the older contract when it takes over. Reads the receipts as last
        fetched, never the remote, and a contract's versions only when it is behind."""
        handle = self.home.settings.team.handle
        logs: dict[str, list[AnyReceipt]] = {}
        drifted: list[HzError] = []
        for member in members:
            try:
                if member.repo not in logs:
                    branch = StateBranch(self.home.root, member.repo)
                    logs[member.repo] = branch.cached_receipts().receipts
                ran = _newest_contract(logs[member.repo], member.team_id, handle)
                if ran is None or ran[1] <= member.version:
                    continue
                versions = ContractVersions(self.home.heinzel_dir(member.heinzel))
                if ran[2] in {versions.read(n)[1].fingerprint for n in versions.all()}:
                    continue
            except HzError:
                continue  # the cache or a version cannot be read: the tick says so elsewhere
            message = (
                f"{ran[0]}'s home runs {member.name} v{ran[1]}; this home has "
                f"v{member.version}: make the same amendment here"
            )
            drifted.append(HzError(DRIFT, message, member.name))
        return drifted

    def _seen_failed(self, heinzel_id: str, error: HzError) -> None:
        """A team error after the lease step (receipts, the push): kept with the lease seen,
        unless the lease step met one already."""
        seen = self._team_seen()
        known = seen.get(heinzel_id)
        if known is not None and known.error is None:
            update = {"error_code": error.code, "error": error.one_line()}
            seen[heinzel_id] = known.model_copy(update=update)

    async def _lease_steps(
        self, members: list[TeamMember], now: datetime, ttl: timedelta
    ) -> list[tuple[TeamMember, _LeaseStep]]:
        """The lease step of every active member: one repository's members in turn (they
        share its cache), the repositories side by side, so a hung remote holds only its own."""
        by_repo: dict[str, list[TeamMember]] = {}
        for member in members:
            if member.active:
                by_repo.setdefault(member.repo, []).append(member)
        if by_repo:
            self.team_home_id()  # minted here, once, not by two threads at the same time

        def steps(
            group: list[TeamMember],
        ) -> list[tuple[TeamMember, _LeaseStep]]:
            return [(member, self._lease_step(member, now, ttl)) for member in group]

        done = await asyncio.gather(*(asyncio.to_thread(steps, g) for g in by_repo.values()))
        return [outcome for group in done for outcome in group]

    def _lease_step(self, member: TeamMember, now: datetime, ttl: timedelta) -> _LeaseStep:
        """The lease in force after this tick's renewal or takeover (git: in a worker thread).

        A delegate never starts a lease (the owner's first tick does) and takes
        one over only once it expired. An owner that finds a delegate holding
        its heinzel claims it back; the delegate then releases the lease and
        leaves it for the owner while the claim is fresh. When the remote
        cannot be reached, the lease is the one this home saw last.
        """
        handle = self.home.settings.team.handle
        assert handle is not None
        try:
            repo = TeamRepo(self.home.root, member.repo)
            home = self.team_home_id()
            if member.delegate:
                current = read_lease(repo, member.team_id)
                if current is None or (current.holder != handle and not current.expired(now)):
                    return current, _clock_ahead(current, handle, now)
                wanted = mirrored_claim(repo, member.team_id)
                if (
                    wanted is not None
                    and wanted.owner != handle
                    and wanted.owner == (current.owner or wanted.owner)
                    and wanted.fresh(now, ttl)
                ):
                    return release(repo, member.team_id, handle=handle, now=now), None
            outcome = acquire_or_renew(
                repo, member.team_id, handle=handle, now=now, ttl=ttl, home=home
            )
            if not member.delegate and not outcome.held:
                claim(repo, member.team_id, handle=handle, now=now)
            return outcome.lease, _clock_ahead(outcome.lease, handle, now)
        except HzError as exc:
            if exc.code == SHARED_HANDLE:
                return None, exc
            try:
                return read_lease(
                    TeamRepo(self.home.root, member.repo), member.team_id, fetch=False
                ), exc
            except HzError:
                return None, exc

    async def check_lease(self, heinzel_id: str, token: int, name: str) -> None:
        """Refuse to act for a turn whose lease ran out while it ran (HZS121).

        A turn fenced only at its receipts would still place its draft here
        after another home took the slot over (a machine that slept mid-turn).
        So before its first effect, the turn must still hold the lease it
        started under, as this home knows it now (renewed first when this
        kernel has not ticked).
        """
        lease = self.team_leases.get(heinzel_id)
        if lease is None or lease.expired(now_utc()):
            members, _ = await self.team_members()
            for member in (m for m in members if m.heinzel == heinzel_id):
                ttl = timedelta(seconds=2 * tick_interval(self.home.settings))
                lease, _ = await asyncio.to_thread(self._lease_step, member, now_utc(), ttl)
        if lease is None or not self._ours(lease) or lease.expired(now_utc()):
            raise HzError(
                LEASE_LOST,
                "the team lease ran out while this turn ran: it places nothing (the home "
                "holding the lease runs the slot)",
                name,
            )
        if lease.token != token:
            raise HzError(
                LEASE_LOST,
                f"the team lease changed hands while this turn ran (token {token}, now "
                f"{lease.token}): it places nothing",
                name,
            )

    def _ours(self, lease: Lease) -> bool:
        """Whether this home holds ``lease``: its handle, and not another home's sharing it."""
        return lease.holder == self.home.settings.team.handle and lease.home in (
            None,
            self.team_home_id(),
        )

    def team_home_id(self) -> str:
        """This home's own id in leases (minted once), which tells it from a home that shares
        its handle."""
        known: str | None = getattr(self, "_home_id", None)
        if known is not None:
            return known
        path = self.home.root / "team" / "home-id"
        with store_io(path):
            minted = path.read_text().strip() if path.exists() else ""
            if not re.fullmatch(HOME_ID, minted):
                ensure_private_dir(path.parent)
                minted = str(ULID())
                atomic_write(path, minted.encode())
        self._home_id = minted
        return minted

    async def lease_token(self, heinzel_id: str, row: Mapping[str, Any]) -> int | None:
        """The fencing token a turn of this heinzel starts under: None outside a team.

        A team heinzel's turn starts only while this home holds its lease
        (HZS115 otherwise). A kernel that has not ticked yet (``hz heinzel
        wake`` from the command line) renews or takes the lease first.
        """
        if row.get("namespace") != "team":
            return None
        now = now_utc()
        lease = self.team_leases.get(heinzel_id)
        if lease is None:
            members, _ = await self.team_members()
            for member in (m for m in members if m.heinzel == heinzel_id):
                ttl = timedelta(seconds=2 * tick_interval(self.home.settings))
                lease, _ = await asyncio.to_thread(self._lease_step, member, now, ttl)
        if lease is None or not self._ours(lease) or lease.expired(now):
            held = (
                f"{lease.holder} holds it until {stamp(lease.expires)}"
                if lease is not None and not lease.expired(now)
                else "the next tick takes it if it is free"
            )
            raise HzError(NOT_HELD, f"this home does not hold the lease: {held}", row.get("name"))
        return lease.token

    # -- the tick: receipts after turns ------------------------------------------------

    async def team_after_turns(self, now: datetime) -> list[TickProblem]:
        """Queue the receipts of what each team spine recorded since the last tick; push them."""
        members, _ = await self.team_members()
        problems: list[TickProblem] = []
        for member in members:
            try:
                await self._queue_receipts(member)
            except SpineBusy:
                continue  # another process writes the spine: the next tick queues it
            except HzError as exc:
                problems.append(_problem(exc, member.name))
                self._seen_failed(member.heinzel, exc)
        repos = sorted({m.repo for m in members})
        results = await asyncio.gather(
            *(
                asyncio.to_thread(StateBranch(self.home.root, r).push_pending, now=now)
                for r in repos
            )
        )
        for repo, result in zip(repos, results, strict=True):
            problems += [
                TickProblem(code=r.code, message=r.message, place=r.path) for r in result.refused
            ]
            if result.error is not None:
                code, _, message = result.error.partition(": ")
                problems.append(TickProblem(code=code, message=message, place=repo))
                for member in (m for m in members if m.repo == repo):
                    self._seen_failed(member.heinzel, HzError(code, message, repo))
            if result.restored:
                message = (
                    f"{len(result.restored)} receipt(s) this home delivered were gone from "
                    "hz/state (someone moved it back): pushed again"
                )
                problems.append(TickProblem(code=RESTORED, message=message, place=repo))
        self._keep_seen({m.heinzel for m in members})
        return problems

    async def _queue_receipts(self, member: TeamMember) -> None:
        path = self._cursor_path(member.heinzel)
        cursor = _read_cursor(path)
        if member.seq == cursor.seq:
            return
        handle = self.home.settings.team.handle
        assert handle is not None
        async with self.holding(member.heinzel) as held:
            events = list(held.scan.events)
        last = events[-1].seq if events else 0
        if cursor.seq > last:
            raise _damaged(path, f"seq {cursor.seq} is beyond the spine's {last}")
        if not events or cursor.seq == last:
            return
        lease = self.team_leases.get(member.heinzel)
        token = lease.token if lease is not None and lease.holder == handle else 0
        receipts = receipts_from(events, heinzel=member.team_id, handle=handle, token=token)
        if cursor.count > len(receipts):
            raise _damaged(path, f"count {cursor.count} is beyond the spine's {len(receipts)}")
        StateBranch(self.home.root, member.repo).queue(receipts[cursor.count :])
        with store_io(path):
            ensure_private_dir(path.parent)
            atomic_write(
                path, _Cursor(seq=events[-1].seq, count=len(receipts)).model_dump_json().encode()
            )

    def _cursor_path(self, heinzel_id: str) -> Path:
        return self.home.root / "team" / "cursors" / f"{heinzel_id}.json"

    # -- hz team status | log ----------------------------------------------------------

    async def team_status(self) -> api.TeamStatus:
        """Who holds each team heinzel's lease and until when, and what waits to be pushed.

        What it fetched is recorded as a tick's lease step is, so the listing agrees.
        """
        members, errors = await self.team_members()
        handle = self.home.settings.team.handle
        now = now_utc()
        rows: list[api.TeamLeaseRow] = []
        for member in members:
            lease, error = await asyncio.to_thread(self._read_lease, member)
            self._team_seen()[member.heinzel] = Seen(
                repo=member.repo,
                at=now,
                lease=_seen(lease, self._ours(lease)) if lease is not None else None,
                error_code=error.partition(":")[0] if error else None,
                error=error,
            )
            rows.append(
                api.TeamLeaseRow(
                    name=member.name,
                    heinzel=member.heinzel,
                    team_id=member.team_id,
                    repo=member.repo,
                    role="delegate" if member.delegate else "owner",
                    holder=lease.holder if lease else None,
                    expires=stamp(lease.expires) if lease else None,
                    token=lease.token if lease else None,
                    held_here=lease is not None and lease.holder == handle,
                    free=_free(lease, now),
                    error=error,
                )
            )
        branches = {
            repo: StateBranch(self.home.root, repo) for repo in sorted({m.repo for m in members})
        }
        foreign = await asyncio.to_thread(lambda: [b.tip_problem() for b in branches.values()])
        drifted = await asyncio.to_thread(self._drift, members)
        self._keep_seen({m.heinzel for m in members})
        return api.TeamStatus(
            handle=handle,
            leases=rows,
            pending={repo: len(branch.pending()) for repo, branch in branches.items()},
            problems=[error.one_line() for error in [*errors, *drifted]]
            + list(filter(None, foreign)),
        )

    def _read_lease(self, member: TeamMember) -> tuple[Lease | None, str | None]:
        repo = TeamRepo(self.home.root, member.repo)
        try:
            return read_lease(repo, member.team_id), None
        except HzError as exc:
            try:
                return read_lease(repo, member.team_id, fetch=False), exc.one_line()
            except HzError:
                return None, exc.one_line()

    async def team_log(self) -> api.TeamLog:
        """The receipts on ``hz/state`` of every team repository this home uses, oldest first."""
        rows = await self.index.fetch("", TEAM_QUERY, ())
        names = {team_id(row["name"]): row["name"] for row in rows}
        settings = self.home.settings.team
        named = (team_spec(row["team"]).get("repo") for row in rows)
        repos = sorted(set(filter(None, [*named, settings.repo])))
        entries: list[api.TeamReceipt] = []
        errors: list[str] = []
        for repo in repos:
            log, error = await asyncio.to_thread(self._read_receipts, repo)
            errors += filter(None, [error, log.problem])
            errors += [
                HzError(UNREADABLE, _UNREADABLE, f"{repo}: {path}").one_line()
                for path in log.unreadable
            ]
            errors += [
                HzError(r.code, r.message, f"{repo}: {r.path}").one_line() for r in log.refused
            ]
            for receipt in log.receipts:
                fields = receipt.model_dump(mode="json")
                entries.append(
                    api.TeamReceipt(name=names.get(receipt.heinzel), repo=repo, receipt=fields)
                )
        entries.sort(key=lambda e: (str(e.receipt.get("at")), str(e.receipt.get("kind"))))
        return api.TeamLog(receipts=entries, errors=errors)

    def _read_receipts(self, repo: str) -> tuple[ReceiptLog, str | None]:
        state = StateBranch(self.home.root, repo)
        try:
            return state.read_receipts(), None
        except HzError as exc:
            try:
                return state.read_receipts(fetch=False), exc.one_line()
            except HzError:
                return ReceiptLog(receipts=[]), exc.one_line()


def _newest_contract(
    receipts: list[AnyReceipt], heinzel: str, handle: str | None
) -> tuple[str, int, str] | None:
    """Who ran ``heinzel`` last on another home, and under which contract version and
    fingerprint: its newest ``contract.amended`` or ``turn.finished`` receipt that names them."""
    ran: list[tuple[str, str, int, str]] = []
    for receipt in receipts:
        if receipt.heinzel != heinzel or receipt.by is None or receipt.by == handle:
            continue
        if isinstance(receipt, ContractAmendedReceipt):
            ran.append((receipt.at, receipt.by, receipt.version, receipt.fingerprint))
        elif (
            isinstance(receipt, TurnFinishedReceipt)
            and receipt.contract_fp is not None
            and receipt.contract_version is not None
        ):
            ran.append((receipt.at, receipt.by, receipt.contract_version, receipt.contract_fp))
    if not ran:
        return None
    _, by, version, fingerprint = max(ran)
    return by, version, fingerprint


def _decided(
    item: PlannedTurn, lease: Lease | None, handle: str | None, now: datetime
) -> PlannedTurn:
    """A team heinzel's decision as this home may carry it out under ``lease``.

    The holder decides its slots, so here they are skipped ``held-by`` it,
    whatever this home planned. A slot that fired after the holder's last
    renewal waits instead: the holder may have gone silent before deciding
    it, and then the home that takes the lease over runs it.
    """
    if lease is not None and lease.holder == handle and not lease.expired(now):
        return item
    if item.action == "skip" and (lease is None or lease.expired(now)):
        return item
    if lease is not None and not lease.expired(now):
        if item.action in ("run", "skip") and item.wakes and not _undecided(item, lease):
            return item.model_copy(
                update={"action": "skip", "reason": "held-by", "holder": lease.holder}
            )
        return item.model_copy(
            update={"action": "defer", "reason": "held-by", "holder": lease.holder}
        )
    return item.model_copy(update={"action": "defer", "reason": "no-lease"})


def _undecided(item: PlannedTurn, lease: Lease) -> bool:
    """Whether one of the item's slots fired after the holder last renewed its lease."""
    renewed = lease.renewed
    return renewed is not None and any(
        w.slot is not None and slot_time(w.slot) > renewed for w in item.wakes
    )


def _clock_ahead(lease: Lease | None, handle: str, now: datetime) -> HzError | None:
    """HZS125 when another home renewed ``lease`` later than this home's clock says it is
    now: one of the two clocks is off, and expiry and claims need clocks that agree (an owner
    whose clock is a lease length behind would claim its heinzel back in vain)."""
    if lease is None or lease.holder == handle or lease.renewed is None:
        return None
    ahead = lease.renewed - now
    if ahead <= CLOCK_TOLERANCE:
        return None
    message = (
        f"{lease.holder} renewed the lease {_minutes(ahead)} later than this home's clock says "
        "it is now: set both clocks right (NTP); leases and claims need clocks that agree"
    )
    return HzError(CLOCK_SKEW, message)


def _minutes(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    return f"{minutes} min" if minutes else f"{int(span.total_seconds())} s"


def _seen(lease: Lease, ours: bool) -> SeenLease:
    return SeenLease(
        holder=lease.holder,
        expires=lease.expires,
        token=lease.token,
        renewed=lease.renewed,
        ours=ours,
    )


def _free(lease: Lease | None, now: datetime) -> Literal["expired", "released"] | None:
    """Whether ``lease`` no longer holds: ran out, or handed back (``renewed == expires``)."""
    if lease is None or not lease.expired(now):
        return None
    return "released" if lease.renewed == lease.expires else "expired"


def _read_cursor(path: Path) -> _Cursor:
    if not path.exists():
        return _Cursor()
    try:
        with store_io(path):
            return _Cursor.model_validate_json(path.read_bytes())
    except ValidationError:
        raise _damaged(path, "not a cursor") from None


def _damaged(path: Path, why: str) -> HzError:
    return HzError("HZS116", f"the receipts cursor is damaged ({why}): delete it", str(path))


def _problem(error: HzError, name: str | None = None) -> TickProblem:
    place = f"{name}: {error.place}" if name and error.place else error.place or name
    return TickProblem(code=error.code, message=error.message, place=place)
