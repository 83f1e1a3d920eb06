"""Store commands: list, show, verify and prune — reads of the index and care of the files."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hz_kernel import api
from hz_kernel.adapters.pricing import price_known
from hz_kernel.clock import now_utc
from hz_kernel.contracts import ContractError, ContractVersions
from hz_kernel.contracts.model import DEFAULT_MAX_TOKENS, AgentSpec
from hz_kernel.core import KernelCore
from hz_kernel.errors import HzError, UsageError
from hz_kernel.listing import fill_next_due, list_summaries
from hz_kernel.store.bodies import BODY_NAME, body_path
from hz_kernel.store.inbox import Inbox
from hz_kernel.store.scan import index_break, scan_file
from hz_kernel.store.spine import SPINE_NAME
from hz_kernel.team.seen import fill_team
from hz_kernel.tick.cache import SourceCache
from hz_kernel.tick.failures import failures_path, read_failures
from hz_kernel.vocabulary import ChainAccepted


class StoreCommands(KernelCore):
    """``hz heinzel list|show|verify|prune``."""

    async def list_heinzels(
        self,
        *,
        state: str | None = None,
        artifact: str | None = None,
        contract: str | None = None,
        where: dict[str, str] | None = None,
        ids: list[str] | None = None,
    ) -> api.HeinzelList:
        items = await list_summaries(
            self.index,
            self.slot_clock(self.home.settings.heinzel.timezone),
            state=state,
            artifact=artifact,
            contract=contract,
            where=where,
            ids=ids,
            failures=read_failures(failures_path(self.home.heinzel_root)),
            queued=self.queued_heinzels(),
            team=(self.home.root, self.home.settings.team),
        )
        if self.runs_every_turn:
            items = [self._marked_cut(item) for item in items]
        return api.HeinzelList(items=items, warnings=[w.one_line() for w in self.warnings])

    def _marked_cut(self, item: api.HeinzelSummary) -> api.HeinzelSummary:
        """The row, marked ``interrupted`` when its open turn runs nowhere now.

        Open in the spine is not running: a killed daemon leaves its turns
        open until they resume. Only the daemon knows: every turn of its home
        runs in it; any other kernel leaves the row as it is.
        """
        if item.state != "awake" or item.queued:
            return item
        if item.id in self.running_turns():
            return item
        return item.model_copy(update={"interrupted": True})

    async def spend_today(self) -> api.SpendToday:
        """Today's spending across the home and the day's cap, as the turn's cap check sees them."""
        day = now_utc().date().isoformat()
        return api.SpendToday(
            day=day,
            spent_usd=self.index.spent_on(day),
            cap_usd=self.home.settings.heinzel.max_usd_per_day,
        )

    async def show(self, ref: str) -> api.HeinzelDetail:
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        now = now_utc()
        day = now.date().isoformat()
        summary = await self.index.list_heinzels(day=day, name=row["name"])
        summary = [s for s in summary if s["id"] == heinzel_id] or [row]
        fill_next_due(summary, self.slot_clock(self.home.settings.heinzel.timezone), now)
        failure = read_failures(failures_path(self.home.heinzel_root)).get(heinzel_id)
        await fill_team(self.index, summary, self.home.root, self.home.settings.team, now)
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
        requests, refused = Inbox(heinzel_dir).scan()
        pending = [r for r in requests if r.request_id not in delivered]
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
        model = self._model_in_use(row, heinzel_dir)
        return api.HeinzelDetail(
            heinzel=api.HeinzelSummary.model_validate(
                {**summary[0], "failure": failure, "queued": self.queued_heinzels().get(heinzel_id)}
            ),
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
            notices=[
                api.Notice.model_validate(x)
                for x in await self.index.fetch(
                    "notices",
                    "SELECT heinzel, key, notice, ts FROM notices WHERE heinzel = ? "
                    "ORDER BY seq DESC LIMIT ?",
                    (heinzel_id, api.NOTICES_SHOWN),
                )
            ],
            pending_requests=len(pending),
            inbox_skipped=[exc.one_line() for exc in refused],
            **model,
            cost_month=api.CostByCause(
                total=round(sum(c["usd"] for c in costs), 6),
                by_cause={c["cause"]: round(c["usd"], 6) for c in costs},
            ),
            caps=self._caps(row, model.get("model"), turns, month),
        )

    def _caps(
        self, row: dict[str, Any], model: str | None, turns: list[dict[str, Any]], month: str
    ) -> api.TurnCaps | None:
        """The caps a turn of this heinzel runs under, and whether its cost can be known."""
        hz = row.get("hz") or {}
        if not hz or model is None:
            return None
        agent = hz.get("agent") or {}
        return api.TurnCaps(
            model=model,
            priced=price_known(model),
            max_usd=float(agent.get("max_usd", AgentSpec().max_usd)),
            max_tokens=int(agent.get("max_tokens") or DEFAULT_MAX_TOKENS),
            tokens_month=sum(
                int(t["tokens"] or 0) for t in turns if str(t["started_at"])[:7] == month
            ),
        )

    def _model_in_use(self, row: dict[str, Any], heinzel_dir: Path) -> dict[str, Any]:
        """The model a turn would use now (the approved contract's, else the proposal's, else
        the home's default), read from the contract the way a turn reads it."""
        hz = row.get("hz") or {}
        chosen = (hz.get("agent") or {}).get("model")
        if row.get("contract_version"):
            try:
                compiled = ContractVersions(heinzel_dir).read(int(row["contract_version"]))[1]
            except ContractError:
                return {}
            chosen = compiled.hz.agent.model
        if chosen:
            return {"model": chosen, "model_from": "contract"}
        return {"model": self.home.settings.model.default, "model_from": "home"}

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
            reports: list[api.VerifyReport] = []
            for heinzel_id in ids:
                row = await self.index.heinzel(heinzel_id)
                reports.append(await self._verify_one(heinzel_id, row, accept=False))
            return reports
        # The row that resolved the name is the one to check against: no second read.
        row = await self.resolve(ref)
        return [await self._verify_one(row["id"], row, accept=accept)]

    async def _verify_one(
        self, heinzel_id: str, row: dict[str, Any] | None, *, accept: bool
    ) -> api.VerifyReport:
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
        seen = self.index.seen(heinzel_id)
        # The fast scan checks the chain, not what each line holds: it is enough only for the
        # very lines an index fold read and found sound (a payload of the wrong types is
        # damage the fold saw); anything else is read line by line.
        if seen != (found.last_seq, found.last_hash) or row is None or row["damaged"]:
            found = scan_file(spine)
        contradiction = index_break(seen, found)
        breaks = [*found.breaks, *([contradiction] if contradiction else [])]
        name = row["name"] if row else heinzel_id
        accepted_now = False
        if accept and breaks:
            # A session held from before the damage knows the spine as it wrote it, not as it
            # is now (a writer that found it cut writes nothing more): read it afresh.
            self.release(heinzel_id)
            async with self.holding(heinzel_id) as held:
                marks = [b.model_dump(include={"seq", "offset", "problem", "hash"}) for b in breaks]
                await held.append(ChainAccepted(breaks=marks))
                held.scan.accepted.extend(held.scan.breaks)
                held.scan.breaks.clear()
                held.accepted()
                await held.sync_index(full=True)
            accepted_now = True
            await self.accepted(heinzel_id)
            # Warnings about this spine (its writer found it cut, say) are answered now.
            self.warnings = [w for w in self.warnings if heinzel_id not in str(w.place or "")]
            found = scan_file(spine, collect=False)
            settled = [*found.accepted, *([contradiction] if contradiction else [])]
            breaks, contradiction = [], None
        else:
            if row is not None and bool(row["damaged"]) != bool(breaks):
                await self.index.set_damaged(heinzel_id, bool(breaks))
            settled = found.accepted
        problems = [api.ChainProblem(**b.model_dump()) for b in breaks] + [
            api.ChainProblem(**b.model_dump(), accepted=True) for b in settled
        ]
        return api.VerifyReport(
            id=heinzel_id,
            name=str(name),
            ok=found.intact and contradiction is None,
            events=found.lines,
            bytes=found.size,
            last_seq=found.last_seq,
            problems=problems,
            torn_tail_bytes=found.torn.size if found.torn else 0,
            accepted_now=accepted_now,
        )

    async def prune(self, *, now: datetime | None = None) -> api.PruneReport:
        """Delete expired turn bodies, delivered inbox files and cached source results.

        Only names hz writes, only regular files (never a link), only turns
        that have ended and requests that were delivered, older than
        ``retention_days``. A body something still needs is never removed,
        whatever its age: the one holding a pending draft's text (its
        approval learns from it), an open question's, and those of each
        output's last approved draft and its approval (the next turn's
        context, a reader of that output). Running it twice removes nothing
        more.
        """
        days = self.home.settings.heinzel.retention_days
        if days == 0:
            return api.PruneReport(bodies_removed=0, requests_removed=0, bytes_freed=0)
        moment = now or now_utc()
        cutoff = (moment - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S")
        ended = await self.index.fetch(
            "",
            "SELECT heinzel, turn FROM turns WHERE status IN ('finished', 'skipped') "
            "AND finished_at < ?",
            (cutoff,),
        )
        needed = await self._bodies_needed()
        delivered = await self.index.fetch(
            "",
            "SELECT heinzel, request_id FROM requests WHERE status IN "
            "('consumed', 'answered', 'steered')",
        )
        bodies = removed_requests = freed = 0
        for row in ended:
            if (row["heinzel"], row["turn"]) in needed:
                continue
            path = body_path(self.home.heinzel_dir(row["heinzel"]), row["turn"])
            if BODY_NAME.match(path.name):
                size = _unlink_regular(path)
                if size is not None:
                    bodies += 1
                    freed += size
        cutoff_dt = datetime.fromisoformat(cutoff).replace(tzinfo=UTC)
        for row in delivered:
            inbox = Inbox(self.home.heinzel_dir(row["heinzel"]))
            try:
                request = inbox.get(row["request_id"])
            except HzError:
                continue
            if request is None or request.admitted_at >= cutoff_dt:
                continue
            sizes = [_unlink_regular(path) for path in inbox.files(row["request_id"])]
            removed = [size for size in sizes if size is not None]
            removed_requests += bool(removed)
            freed += sum(removed)
        sources = SourceCache(self.home.sources_dir).prune(older_than=cutoff_dt)
        return api.PruneReport(
            bodies_removed=bodies,
            requests_removed=removed_requests,
            sources_removed=sources,
            bytes_freed=freed,
        )

    async def _bodies_needed(self) -> set[tuple[str, str]]:
        """(heinzel, turn) of every body that prune must keep, whatever its age."""
        rows = await self.index.fetch(
            "",
            "WITH last AS (SELECT d.heinzel, d.turn, d.key FROM drafts d "
            "WHERE d.status = 'approved' AND d.seq = (SELECT MAX(e.seq) FROM drafts e "
            "WHERE e.heinzel = d.heinzel AND e.asset IS d.asset AND e.status = 'approved')) "
            "SELECT heinzel, turn FROM last "
            "UNION SELECT k.heinzel, k.turn FROM keys k JOIN last l ON k.heinzel = l.heinzel "
            "AND k.key = l.heinzel || '@approval:' || l.key "
            "UNION SELECT heinzel, turn FROM drafts WHERE status = 'pending' "
            "UNION SELECT heinzel, turn FROM questions WHERE status = 'pending'",
        )
        return {(r["heinzel"], r["turn"]) for r in rows if r["turn"]}


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
