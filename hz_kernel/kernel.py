"""The kernel facade: every command hz knows, in one place, whatever head calls it.

The kernel is the only writer of spines. It holds a heinzel's session
(lock, writer, projection) while it works on it and answers every read
from the index. Heads — the CLI, the cockpit, the daemon's routes — call
these methods through ``KernelClient`` and never touch the files.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ulid import ULID

from hz_kernel import api
from hz_kernel.errors import HzError, UsageError
from hz_kernel.home import Home
from hz_kernel.store.bodies import BODY_NAME, body_path
from hz_kernel.store.envelope import Event
from hz_kernel.store.inbox import REQUEST_NAME, Inbox
from hz_kernel.store.index import Index, SpineStat, stat_spine
from hz_kernel.store.locks import FileLock
from hz_kernel.store.projection import Projection
from hz_kernel.store.scan import SpineScan, scan_file
from hz_kernel.store.session import HeldSession, project
from hz_kernel.store.spine import LOCK_NAME, SPINE_NAME
from hz_kernel.vocabulary import ChainAccepted, EventData, HeinzelCreated


def now_utc() -> datetime:
    """The kernel's clock: ``HZ_NOW`` pins it for a run (tests, demos), else the real time."""
    pinned = os.environ.get("HZ_NOW")
    if pinned:
        try:
            moment = datetime.fromisoformat(pinned.replace("Z", "+00:00"))
        except ValueError:
            raise HzError("HZU001", "HZ_NOW is not an ISO time", pinned) from None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return datetime.now(UTC)


class Kernel:
    """One home's kernel. Open it with ``await Kernel.open(home)``; close it when done."""

    def __init__(self, home: Home, index: Index) -> None:
        self.home = home
        self.index = index
        self.sessions: dict[str, HeldSession] = {}
        self.warnings: list[HzError] = []

    @classmethod
    async def open(cls, home: Home, *, reconcile: bool = True) -> Kernel:
        home.heinzel_root.mkdir(mode=0o700, parents=True, exist_ok=True)
        kernel = cls(home, await Index.open(home.index_path))
        if reconcile:
            await kernel.reconcile()
        return kernel

    async def close(self) -> None:
        for session in list(self.sessions.values()):
            session.close()
        self.sessions.clear()
        await self.index.close()

    # -- sessions (the write side) ---------------------------------------------------------

    async def session(self, heinzel_id: str) -> HeldSession:
        """This kernel's hold on a heinzel's spine, opened (and indexed) on first use."""
        held = self.sessions.get(heinzel_id)
        if held is None:
            held = HeldSession(heinzel_id, self.home.heinzel_dir(heinzel_id), self.index)
            self.sessions[heinzel_id] = held
            await held.sync_index(full=True)
        return held

    def release(self, heinzel_id: str) -> None:
        held = self.sessions.pop(heinzel_id, None)
        if held is not None:
            held.close()

    @contextlib.asynccontextmanager
    async def holding(self, heinzel_id: str) -> AsyncIterator[HeldSession]:
        """Hold a session for one command, releasing it after unless it was already held."""
        was_held = heinzel_id in self.sessions
        held = await self.session(heinzel_id)
        try:
            yield held
        finally:
            if not was_held:
                self.release(heinzel_id)

    async def append(
        self,
        heinzel_id: str,
        payload: EventData,
        *,
        turn: str | None = None,
        key: str | None = None,
    ) -> Event:
        held = await self.session(heinzel_id)
        return await held.append(payload, turn=turn, key=key)

    async def create_heinzel(
        self, name: str, *, namespace: str = "me", origin: str = "file", template: str | None = None
    ) -> str:
        """Mint an id and write the heinzel's first event. Names are checked by the caller."""
        heinzel_id = f"hz-{ULID()}"
        async with self.holding(heinzel_id) as held:
            await held.append(
                HeinzelCreated(
                    name=name,
                    namespace=namespace,  # type: ignore[arg-type]
                    origin=origin,  # type: ignore[arg-type]
                    template=template,
                )
            )
        return heinzel_id

    # -- keeping the index honest --------------------------------------------------------

    async def reconcile(self) -> list[str]:
        """Rebuild the rows of every spine that moved since the index last saw it.

        Costs one ``stat`` per spine; a spine is opened only when it differs.
        A spine whose lock another process holds is left to that writer.
        """
        marks = await self.index.spine_marks()
        ids = self.home.heinzel_ids()
        stale: list[str] = []
        stats: dict[str, SpineStat | None] = {}
        for heinzel_id in ids:
            st = stat_spine(self.home.heinzel_dir(heinzel_id) / SPINE_NAME)
            stats[heinzel_id] = st
            mark = marks.get(heinzel_id)
            if mark is None or st is None or (mark[1], mark[2]) != (st.size, st.mtime_ns):
                stale.append(heinzel_id)
        gone = set(marks) - set(ids)
        await self.index.forget(gone)
        rebuilt = await self._rebuild(stale, stats, skip_busy=True)
        return rebuilt

    async def reindex(self) -> api.ReindexReport:
        """Rebuild every heinzel's rows from its spine (``hz heinzel reindex``)."""
        started = time.perf_counter()
        ids = self.home.heinzel_ids()
        stats = {i: stat_spine(self.home.heinzel_dir(i) / SPINE_NAME) for i in ids}
        await self.index.forget(set(await self.index.spine_marks()) - set(ids))
        events = 0
        damaged: list[str] = []
        projections: list[Projection] = []
        for heinzel_id in ids:
            proj, found = self._project_from_disk(heinzel_id)
            events += len(found.events) if found else 0
            if proj.heinzel["damaged"]:
                damaged.append(heinzel_id)
            projections.append(proj)
        await self.index.write(projections, stats, full=True, everything=True)
        return api.ReindexReport(
            heinzels=len(ids),
            events=events,
            seconds=round(time.perf_counter() - started, 4),
            damaged=damaged,
        )

    def _project_from_disk(self, heinzel_id: str) -> tuple[Projection, SpineScan | None]:
        held = self.sessions.get(heinzel_id)
        if held is not None:
            return held.projection, held.scan
        heinzel_dir = self.home.heinzel_dir(heinzel_id)
        try:
            found = scan_file(heinzel_dir / SPINE_NAME)
        except HzError as exc:
            self.warnings.append(exc)
            proj = Projection(heinzel_id)
            proj.mark_damaged(True)
            return proj, None
        return project(heinzel_id, heinzel_dir, found), found

    async def _rebuild(
        self, ids: list[str], stats: dict[str, SpineStat | None], *, skip_busy: bool
    ) -> list[str]:
        projections: list[Projection] = []
        locks: list[FileLock] = []
        try:
            for heinzel_id in ids:
                if heinzel_id not in self.sessions:
                    lock = FileLock(self.home.heinzel_dir(heinzel_id) / LOCK_NAME)
                    if not lock.try_acquire():
                        if skip_busy:
                            continue
                    else:
                        locks.append(lock)
                projections.append(self._project_from_disk(heinzel_id)[0])
            await self.index.write(projections, stats, full=True)
        finally:
            for lock in locks:
                lock.release()
        return [p.id for p in projections]

    # -- reading -----------------------------------------------------------------------

    async def resolve(self, ref: str) -> dict[str, Any]:
        """The index row of a heinzel named by id or name (``HZU010`` when unknown)."""
        row = await self.index.heinzel(ref)
        if row is None:
            raise UsageError("HZU010", "no heinzel with that name or id", ref[:80])
        return row

    async def list_heinzels(
        self,
        *,
        state: str | None = None,
        artifact: str | None = None,
        contract: str | None = None,
        where: dict[str, str] | None = None,
    ) -> api.HeinzelList:
        name, version = _split_contract(contract)
        rows = await self.index.list_heinzels(
            day=now_utc().date().isoformat(),
            state=state,
            artifact=artifact,
            contract=name,
            contract_version=version,
            where=where,
        )
        return api.HeinzelList(
            items=[api.HeinzelSummary.model_validate(r) for r in rows],
            warnings=[w.one_line() for w in self.warnings],
        )

    async def show(self, ref: str) -> api.HeinzelDetail:
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        day = now_utc().date().isoformat()
        summary = await self.index.list_heinzels(day=day, name=row["name"])
        summary = [s for s in summary if s["id"] == heinzel_id] or [row]
        turns = await self.index.rows_of("turns", heinzel_id)
        heinzel_dir = self.home.heinzel_dir(heinzel_id)
        month = day[:7]
        costs = await self.index.fetch(
            "costs",
            "SELECT cause, SUM(usd) AS usd FROM costs WHERE heinzel = ? AND day LIKE ? "
            "GROUP BY cause ORDER BY usd DESC",
            (heinzel_id, f"{month}%"),
        )
        requests = await self.index.rows_of("requests", heinzel_id)
        delivered = {r["request_id"] for r in requests}
        pending = [r for r in Inbox(heinzel_dir).all() if r.request_id not in delivered]
        versions_dir = heinzel_dir / "contract"
        versions = (
            sorted(
                int(p.name[1:].split(".")[0])
                for p in versions_dir.glob("v*.prose.md")
                if p.name[1:].split(".")[0].isdigit()
            )
            if versions_dir.is_dir()
            else []
        )
        return api.HeinzelDetail(
            heinzel=api.HeinzelSummary.model_validate(summary[0]),
            contract_versions=versions,
            inputs=row.get("inputs") or {},
            turns=[
                api.TurnSummary.model_validate(
                    {**t, "body_present": body_path(heinzel_dir, t["turn"]).exists()}
                )
                for t in turns
            ],
            drafts=[
                api.DraftSummary.model_validate({**d, "heinzel_name": row["name"]})
                for d in await self.index.rows_of("drafts", heinzel_id)
            ],
            lessons=[
                api.LessonSummary.model_validate(x)
                for x in await self.index.rows_of("lessons", heinzel_id)
            ],
            amendments=[
                api.AmendmentSummary.model_validate(x)
                for x in await self.index.rows_of("amendments", heinzel_id)
            ],
            questions=[
                api.QuestionSummary.model_validate(x)
                for x in await self.index.rows_of("questions", heinzel_id)
            ],
            pending_requests=len(pending),
            cost_month=api.CostByCause(
                total=round(sum(c["usd"] for c in costs), 6),
                by_cause={c["cause"]: round(c["usd"], 6) for c in costs},
            ),
        )

    # -- verify, prune -----------------------------------------------------------------

    async def verify(
        self, ref: str | None = None, *, accept: bool = False
    ) -> list[api.VerifyReport]:
        """Check chains; with ``accept``, record the user's acceptance of the breaks found."""
        if ref is None:
            if accept:
                raise UsageError("HZU020", "--accept needs the name of one heinzel")
            rows = await self.index.list_heinzels(day="")
            ids = sorted({r["id"] for r in rows} | set(self.home.heinzel_ids()))
        else:
            ids = [(await self.resolve(ref))["id"]]
        reports: list[api.VerifyReport] = []
        for heinzel_id in ids:
            reports.append(await self._verify_one(heinzel_id, accept=accept))
        return reports

    async def _verify_one(self, heinzel_id: str, *, accept: bool) -> api.VerifyReport:
        spine = self.home.heinzel_dir(heinzel_id) / SPINE_NAME
        try:
            found = scan_file(spine, collect=False)
        except HzError as exc:
            problem = api.ChainProblem(
                code=exc.code, seq=None, offset=0, problem="unreadable-file", detail=exc.message
            )
            return api.VerifyReport(
                id=heinzel_id,
                name=heinzel_id,
                ok=False,
                events=0,
                bytes=0,
                last_seq=0,
                problems=[problem],
            )
        row = await self.index.heinzel(heinzel_id)
        name = row["name"] if row else heinzel_id
        accepted_now = False
        if accept and found.breaks:
            async with self.holding(heinzel_id) as held:
                marks = [b.model_dump(include={"seq", "offset", "problem"}) for b in found.breaks]
                await held.append(ChainAccepted(breaks=marks))
                held.scan.accepted.extend(held.scan.breaks)
                held.scan.breaks.clear()
                held.projection.mark_damaged(False)
                await held.sync_index()
            accepted_now = True
            found = scan_file(spine, collect=False)
        else:
            await self.index.conn.execute(
                "UPDATE heinzels SET damaged = ? WHERE id = ?", (int(not found.intact), heinzel_id)
            )
        problems = [api.ChainProblem(**b.model_dump()) for b in found.breaks] + [
            api.ChainProblem(**b.model_dump(), accepted=True) for b in found.accepted
        ]
        return api.VerifyReport(
            id=heinzel_id,
            name=str(name),
            ok=found.intact,
            events=found.lines,
            bytes=found.size,
            last_seq=found.last_seq,
            problems=problems,
            torn_tail_bytes=found.torn.size if found.torn else 0,
            accepted_now=accepted_now,
        )

    async def prune(self, *, now: datetime | None = None) -> api.PruneReport:
        """Delete expired turn bodies and delivered inbox files (``hz heinzel prune``).

        Only names hz writes, only regular files (never a link), only turns
        that have ended and requests that were delivered, older than
        ``retention_days``. Running it twice removes nothing more.
        """
        days = self.home.settings.heinzel.retention_days
        if days == 0:
            return api.PruneReport(bodies_removed=0, requests_removed=0, bytes_freed=0)
        cutoff = ((now or now_utc()) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S")
        ended = await self.index.fetch(
            "",
            "SELECT heinzel, turn FROM turns WHERE status IN ('finished', 'skipped') "
            "AND finished_at < ?",
            (cutoff,),
        )
        delivered = await self.index.fetch(
            "",
            "SELECT heinzel, request_id FROM requests WHERE status IN "
            "('consumed', 'answered', 'steered')",
        )
        bodies = removed_requests = freed = 0
        for row in ended:
            path = body_path(self.home.heinzel_dir(row["heinzel"]), row["turn"])
            if BODY_NAME.match(path.name):
                size = _unlink_regular(path)
                if size is not None:
                    bodies += 1
                    freed += size
        cutoff_dt = datetime.fromisoformat(cutoff).replace(tzinfo=UTC)
        for row in delivered:
            inbox = Inbox(self.home.heinzel_dir(row["heinzel"]))
            request = inbox.get(row["request_id"])
            path = inbox.dir / f"{row['request_id']}.json"
            if request is None or not REQUEST_NAME.match(path.name):
                continue
            if request.admitted_at < cutoff_dt:
                size = _unlink_regular(path)
                if size is not None:
                    removed_requests += 1
                    freed += size
        return api.PruneReport(
            bodies_removed=bodies, requests_removed=removed_requests, bytes_freed=freed
        )


def _unlink_regular(path: Path) -> int | None:
    """Remove ``path`` if it is a regular file (a link is never followed nor removed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    path.unlink()
    return st.st_size


def _split_contract(contract: str | None) -> tuple[str | None, int | None]:
    if not contract:
        return None, None
    name, _, version = contract.partition(":")
    if version:
        if not version.lstrip("v").isdigit():
            raise UsageError("HZU021", "a contract filter is NAME or NAME:VERSION", contract)
        return name, int(version.lstrip("v"))
    return name, None
