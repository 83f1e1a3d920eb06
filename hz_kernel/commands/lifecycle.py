"""Lifecycle commands: new, approve and reject, amend, pause, retire, rename, import.

A heinzel is born ``proposed``: its first contract text is compiled and
stored as a proposal, and only ``approve`` makes it version 1 and the
heinzel ``asleep``. Later versions come from amendments, proposed by the
user or by the heinzel (which may only narrow: ``HZC050``) and approved the
same way. Proposal texts live under ``contract/proposals/``; the spine
records only ids and fingerprints.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from ulid import ULID

from hz_kernel import api
from hz_kernel.adapters.sources.files import GlobArgs, glob_matches, pattern_parts
from hz_kernel.commands.waiting import resolve_waiting
from hz_kernel.config import LOCAL_MODEL
from hz_kernel.contracts import (
    CompiledContract,
    ContractError,
    ContractVersions,
    check_amendment,
    compile_contract,
    contract_from_sentence,
    list_templates,
    render_template,
)
from hz_kernel.contracts.versions import text_diff
from hz_kernel.core import KernelCore
from hz_kernel.errors import HzError, UsageError
from hz_kernel.store.fsutil import atomic_write, ensure_private_dir, open_regular, read_nofollow
from hz_kernel.store.session import HeldSession
from hz_kernel.team.placement import unplaced
from hz_kernel.tick.discovery import KnownSources, input_identity, reads_as_discovered
from hz_kernel.tick.fetching import split_asset
from hz_kernel.tick.schedule import user_zone
from hz_kernel.vocabulary import (
    AmendmentDeclined,
    AmendmentProposed,
    ContractAmended,
    ContractApproved,
    ContractProposed,
    HeinzelPaused,
    HeinzelRenamed,
    HeinzelRetired,
    HeinzelUnpaused,
    HeinzelUnretired,
    Usage,
)

_SLUG = re.compile(r"^[a-z][a-z0-9-]{1,62}$")
_PROPOSAL = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


class Proposals:
    """Proposed contract texts of one heinzel (the first one and every amendment)."""

    def __init__(self, heinzel_dir: Path) -> None:
        self.dir = heinzel_dir / "contract" / "proposals"

    def write(self, proposal: str, text: str, compiled: CompiledContract) -> None:
        ensure_private_dir(self.dir)
        atomic_write(self.dir / f"{proposal}.compiled.json", compiled.model_dump_json().encode())
        atomic_write(self.dir / f"{proposal}.prose.md", text.encode())

    def newest(self) -> str | None:
        """The most recent proposal's id (ids are ULIDs, so they sort by time)."""
        try:
            names = [entry.name for entry in self.dir.iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            return None
        ids = sorted(name.removesuffix(".prose.md") for name in names if name.endswith(".prose.md"))
        return ids[-1] if ids else None

    def text(self, proposal: str) -> str:
        if not _PROPOSAL.match(proposal):
            raise UsageError("HZU031", "not a proposal id", proposal[:40])
        try:
            return read_nofollow(self.dir / f"{proposal}.prose.md").decode()
        except OSError:
            raise HzError("HZC085", "the proposal's text is missing", proposal) from None

    def read(self, proposal: str) -> tuple[str, CompiledContract]:
        text = self.text(proposal)
        return text, compile_contract(text, source=f"proposal {proposal}")


class LifecycleCommands(KernelCore):
    """New, amend, pause, retire, rename, import (and the undos); approve and reject."""

    # -- reading -----------------------------------------------------------------------

    async def contract(
        self, ref: str, version: int | None = None, against: int | None = None
    ) -> api.ContractView:
        """A contract version's text and its diff from an earlier one, and what waits for approval.

        Reads only the contract files and the index: no spine is opened, no lock taken.
        """
        row = await self.resolve(ref)
        heinzel_dir = self.home.heinzel_dir(row["id"])
        versions = ContractVersions(heinzel_dir)
        numbers = versions.all()
        shown = version if version is not None else (numbers[-1] if numbers else None)
        text = versions.text(shown) if shown is not None else None
        if against is None and shown is not None:
            against = max((n for n in numbers if n < shown), default=None)
        diff = versions.diff(against, shown) if against is not None and shown is not None else None
        return api.ContractView(
            heinzel=row["id"],
            name=row["name"],
            versions=numbers,
            version=shown,
            text=text,
            against=against if diff is not None else None,
            diff=diff,
            pending=await self._pending_proposal(row, versions),
        )

    async def _pending_proposal(
        self, row: dict[str, Any], versions: ContractVersions
    ) -> api.ContractProposal | None:
        proposals = Proposals(self.home.heinzel_dir(row["id"]))
        if row["pending_amendment"]:
            proposal = str(row["pending_amendment"])
            text = proposals.text(proposal)
            amendments = await self.index.rows_of("amendments", row["id"])
            about = next((a for a in amendments if a["proposal"] == proposal), {})
            current = versions.latest()
            diff = None
            if current is not None:
                diff = text_diff(
                    versions.text(current), text, f"v{current}.prose.md", "proposed.prose.md"
                )
            return api.ContractProposal(
                proposal=proposal,
                by=about.get("by") or "user",
                first=False,
                text=text,
                diff=diff,
                widens=about.get("widens") or [],
                narrows=about.get("narrows") or [],
                reason=about.get("reason"),
            )
        if row["state"] == "proposed" and (proposal := proposals.newest()) is not None:
            text = proposals.text(proposal)
            return api.ContractProposal(proposal=proposal, by="user", first=True, text=text)
        return None

    # -- creating ----------------------------------------------------------------------

    async def new(
        self,
        *,
        text: str | None = None,
        template: str | None = None,
        sentence: str | None = None,
        params: dict[str, str] | None = None,
        source: str = "contract",
        origin: Literal["file", "template", "sentence", "import"] | None = None,
    ) -> api.NewHeinzel:
        """Compile a contract and create a ``proposed`` heinzel holding it for approval.

        A sentence is mapped to a template by the built-in ``local`` model (the
        home's default unless set); any other default model writes the
        contract itself (``engine.creation``), its use recorded on the new
        heinzel's spine as ``usage`` of purpose ``contract``.
        """
        given = [x for x in (text, template, sentence) if x is not None]
        if len(given) != 1:
            raise UsageError(
                "HZU032", "give exactly one of a contract file, --template or a sentence"
            )
        written: Usage | None = None
        if template is not None:
            text, how = render_template(template, params or {}), "template"
        elif sentence is not None and self.home.settings.model.default != LOCAL_MODEL:
            text, written = await self._written_by_model(sentence, params or {})
            how = "sentence"
        elif sentence is not None:
            text, how = contract_from_sentence(sentence, params or {}), "sentence"
        else:
            how = "file"
        assert text is not None
        compiled = compile_contract(text, source=source)
        self._check_reads_not_own(compiled, source)
        await self._check_name_free(compiled.name, compiled.namespace)
        await self._check_assets_free(compiled.assets, None, source)
        heinzel_id = await self.create_heinzel(
            compiled.name,
            namespace=compiled.namespace,
            origin=origin or how,  # type: ignore[arg-type]
            template=template,
        )
        proposal = str(ULID())
        async with self.holding(heinzel_id) as held:
            Proposals(held.dir).write(proposal, text, compiled)
            await held.append(
                ContractProposed(
                    version=1,
                    fingerprint=compiled.fingerprint,
                    size=len(text.encode()),
                    proposal=proposal,
                )
            )
            if written is not None:
                await held.append(written)
        return api.NewHeinzel(
            id=heinzel_id,
            name=compiled.name,
            state="proposed",
            proposal=proposal,
            contract=text,
            fingerprint=compiled.fingerprint,
            warnings=self._unplaced(compiled),
        )

    def _unplaced(self, compiled: CompiledContract) -> list[str]:
        """Why this home could not place a team heinzel in a team yet, one coded line each: a
        warning, never a refusal, since ``[team]`` may be set afterwards."""
        if compiled.namespace != "team":
            return []
        repo = compiled.hz.team.repo if compiled.hz.team else None
        return [e.one_line() for e in unplaced(compiled.name, repo, self.home.settings.team)]

    async def _written_by_model(self, sentence: str, params: dict[str, str]) -> tuple[str, Usage]:
        """The contract the home's default model writes for ``sentence``, and its ``usage``.

        Imported here: the engine pulls in pydantic-ai, which listing and the
        other commands must not pay for.
        """
        from hz_kernel.adapters.models import ModelEnv, price_usd
        from hz_kernel.engine.creation import contract_by_model

        spec = self.home.settings.model.default
        env = ModelEnv.from_environ()
        text, used = await contract_by_model(sentence, spec, env, params)
        cost = price_usd(spec, used, settings=env)
        usage = Usage(
            purpose="contract",
            tokens=used.tokens,
            tokens_cached=used.cached_tokens,
            usd=cost.usd,
            priced=None if cost.priced else False,
        )
        return text, usage

    async def _check_name_free(self, name: str, namespace: str, exclude: str | None = None) -> None:
        rows = await self.index.fetch(
            "", "SELECT id FROM heinzels WHERE name = ? AND namespace = ?", (name, namespace)
        )
        if any(r["id"] != exclude for r in rows):
            raise UsageError(
                "HZU030",
                f"a heinzel named {name!r} already exists in namespace {namespace!r}",
                name,
            )
        former = self.index.former_names().get(name)
        if former is not None and former != exclude:
            now_named = await self.index.heinzel(former)
            raise UsageError(
                "HZU244",
                f"{name!r} is the former name of {now_named['name'] if now_named else former}, "
                "and readers that name it read that heinzel: choose another name",
                name,
            )

    def _check_reads_not_own(self, compiled: CompiledContract, place: str) -> None:
        """Refuse a ``files`` input whose glob takes in a document this contract publishes
        into (``HZC109``): each turn would read its own drafts back as notes, and each draft
        it placed would move the input and wake the next turn."""
        resolve = self.home.settings.documents.resolve
        documents = sorted({os.path.normpath(resolve(split_asset(a)[0])) for a in compiled.assets})
        for name, spec in compiled.inputs.items():
            if (spec.source, spec.method) != ("files", "glob"):
                continue
            args = GlobArgs.model_validate(spec.args)
            root = os.path.normpath(resolve(args.root))
            parts = pattern_parts(args.pattern, root)
            for document in documents:
                inside = os.path.relpath(document, root)
                if inside.startswith(os.pardir) or not glob_matches(parts, Path(inside).parts):
                    continue
                raise ContractError(
                    "HZC109",
                    f"the input {name} ({args.pattern!r} under {root}) would read this "
                    f"heinzel's own document {document}: each turn would take its drafts "
                    "for notes and wake itself again; narrow the pattern or keep the "
                    "document outside that folder",
                    place,
                )

    async def _check_assets_free(
        self, assets: Iterable[str], heinzel_id: str | None, place: str
    ) -> None:
        """Refuse an asset another heinzel already publishes into (``HZC100``), naming it.

        Two heinzels writing one section would each place drafts into it. An
        asset is the document's absolute path under the documents root and its
        anchor, so a relative and an absolute spelling of one file are one
        asset. Retired heinzels keep their claim: they may be unretired.
        """
        resolve = self.home.settings.documents.resolve
        wanted = {_asset_identity(asset, resolve): asset for asset in assets}
        if not wanted:
            return
        ends = [_like_tail(asset) for asset in wanted.values()]
        rows = await self.index.fetch(
            "",
            "SELECT h.id, h.name, h.state, j.value AS asset "
            "FROM heinzels h, json_each(h.assets) j WHERE h.id IS NOT ? AND ("
            + " OR ".join("j.value LIKE ? ESCAPE '!'" for _ in ends)
            + ") ORDER BY h.created_at",
            (heinzel_id, *ends),
        )
        for row in rows:
            asset = wanted.get(_asset_identity(str(row["asset"]), resolve))
            if asset is not None:
                retired = ", retired" if row["state"] == "retired" else ""
                raise ContractError(
                    "HZC100",
                    f"{asset} is already published by the heinzel {row['name']} ({row['id']}"
                    f"{retired}); two heinzels may not publish into one asset: publish "
                    f"elsewhere, or amend {row['name']} to drop it",
                    place,
                )

    async def templates(self) -> api.TemplateList:
        return template_list()

    async def import_dir(self, *, path: str) -> api.ImportReport:
        """Every ``*.prose.md`` in a folder becomes a heinzel at v1, asleep; idempotent."""
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise HzError("HZS003", "not a folder", str(folder))
        created: list[str] = []
        unchanged: list[str] = []
        conflicts: list[str] = []
        for file in sorted(folder.glob("*.prose.md")):
            try:
                fd = open_regular(file, os.O_RDONLY, follow=True)  # a FIFO never blocks
                with os.fdopen(fd, "rb") as handle:
                    text = handle.read().decode("utf-8")
                compiled = compile_contract(text, source=str(file))
            except (OSError, UnicodeDecodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) else exc
                conflicts.append(f"HZS004: {file}: cannot read ({why})")
                continue
            except ContractError as exc:
                conflicts.append(exc.one_line())
                continue
            existing = await self.index.fetch(
                "",
                "SELECT id, contract_fingerprint, proposed_version FROM heinzels "
                "WHERE name = ? AND namespace = ?",
                (compiled.name, compiled.namespace),
            )
            if existing:
                if existing[0]["contract_fingerprint"] == compiled.fingerprint:
                    unchanged.append(compiled.name)
                else:
                    conflicts.append(
                        f"HZU030: {file}: {compiled.name} exists with another contract; "
                        f"amend it with hz heinzel amend {compiled.name} {file}"
                    )
                continue
            try:
                made = await self.new(text=text, source=str(file), origin="import")
            except ContractError as exc:
                conflicts.append(exc.one_line())
                continue
            await self.approve(ref=made.id)
            created.append(made.name)
        return api.ImportReport(created=created, unchanged=unchanged, conflicts=conflicts)

    # -- approving and declining ---------------------------------------------------------

    async def approve(self, *, ref: str, approver: str = "owner") -> api.Decision:
        """Approve the proposed v1 or the amendment ``ref`` names (drafts: ``TurnCommands``)."""
        row, item = await resolve_waiting(self, ref, "approve")
        async with self.holding(row["id"]) as held:
            if item.kind == "contract":
                return await self._approve_first(held, approver)
            return await self._approve_amendment(held, item.key, approver)

    async def _approve_first(self, held: HeldSession, approver: str) -> api.Decision:
        proposal = _last_proposal(held)
        text, compiled = Proposals(held.dir).read(proposal)
        await self._check_assets_free(compiled.assets, held.id, _name(held))
        ContractVersions(held.dir).write(1, text, compiled)
        await held.append(
            ContractApproved(version=1, fingerprint=compiled.fingerprint, approver=approver)
        )
        return api.Decision(
            heinzel=held.id,
            what="contract",
            version=1,
            state=_state(held),
            warnings=self._unplaced(compiled),
        )

    async def _approve_amendment(
        self, held: HeldSession, proposal: str, approver: str
    ) -> api.Decision:
        text, compiled = Proposals(held.dir).read(proposal)
        current = _current_contract(held)
        added = set(compiled.assets) - set(current.assets if current else ())
        await self._check_assets_free(added, held.id, _name(held))
        versions = ContractVersions(held.dir)
        number = (versions.latest() or 0) + 1
        versions.write(number, text, compiled)
        by = held.projection.amendments.get(proposal, {}).get("by") or "user"
        await held.append(
            ContractAmended(
                version=number,
                fingerprint=compiled.fingerprint,
                proposal=proposal,
                by=by,
                approver=approver,
            )
        )
        return api.Decision(
            heinzel=held.id,
            what="amendment",
            version=number,
            state=_state(held),
            warnings=self._unplaced(compiled),
        )

    async def reject(self, *, ref: str, reason: str | None = None) -> api.Decision:
        """Decline the amendment ``ref`` names; its new sources are never proposed again.

        The ``reason`` is kept as one printable line on the event, for the heinzel's history.
        """
        said = "".join(ch for ch in " ".join((reason or "").split()) if ch.isprintable())
        row, item = await resolve_waiting(self, ref, "reject")
        proposal = item.key
        async with self.holding(row["id"]) as held:
            _, proposed = Proposals(held.dir).read(proposal)
            current = _current_contract(held)
            added = self._added_sources(current, proposed) if current else {}
            sources = [*sorted(added), *sorted(path for path in added.values() if path)]
            await held.append(
                AmendmentDeclined(proposal=proposal, sources=sources, reason=said or None)
            )
            return api.Decision(
                heinzel=held.id, what="amendment", declined=True, state=_state(held)
            )

    # -- amending ------------------------------------------------------------------------

    def _added_sources(
        self, current: CompiledContract, proposed: CompiledContract
    ) -> dict[str, str | None]:
        """The inputs ``proposed`` adds, each with the file it reads when it reads one file
        (a source discovery may have found, and a decline names): a path, or ``team:`` and a
        path in the team repository."""
        resolve = self.home.settings.documents.resolve
        team = proposed.hz.team
        team_repo = (team.repo if team else None) or self.home.settings.team.repo
        return {
            name: input_identity(proposed.inputs[name], resolve, team_repo)
            for name in sorted(set(proposed.inputs) - set(current.inputs))
        }

    async def amend(
        self,
        *,
        ref: str,
        text: str,
        by: Literal["heinzel", "user"] = "user",
        reason: str | None = None,
        source: str = "amendment",
    ) -> api.Amendment:
        """Propose a new contract text. From the heinzel, widening is refused (``HZC050``)."""
        row = await self.resolve(ref)
        proposed = compile_contract(text, source=source)
        self._check_reads_not_own(proposed, source)
        async with self.holding(row["id"]) as held:
            current = _current_contract(held)
            if current is None:
                raise UsageError(
                    "HZU035", "approve the first contract before amending it", row["name"]
                )
            zone = user_zone(self.home.settings.heinzel.timezone)
            sources = self._added_sources(current, proposed)
            hints = set(current.hz.discover)
            found = held.projection.discovered
            discovered = frozenset(
                name
                for name, path in sources.items()
                if path and found.get(path) in hints and reads_as_discovered(proposed.inputs[name])
            )
            check = check_amendment(current, proposed, by=by, zone=zone, discovered=discovered)
            added = set(proposed.assets) - set(current.assets)
            await self._check_assets_free(added, held.id, source)
            if by == "heinzel":
                declined = KnownSources(held.projection.declined)
                again = sorted(
                    path or name
                    for name, path in sources.items()
                    if (path in declined if path else name in declined)
                )
                if again:
                    raise ContractError(
                        "HZC108",
                        f"the user declined the source {again[0]!r} before; it is not proposed "
                        "again",
                        source,
                    )
            proposal = str(ULID())
            Proposals(held.dir).write(proposal, text, proposed)
            await held.append(
                AmendmentProposed(
                    proposal=proposal,
                    by=by,
                    fingerprint=proposed.fingerprint,
                    widens=list(check.widens),
                    narrows=list(check.narrows),
                    reason=reason,
                )
            )
            return api.Amendment(
                heinzel=held.id,
                proposal=proposal,
                by=by,
                widens=list(check.widens),
                narrows=list(check.narrows),
            )

    # -- states ----------------------------------------------------------------------------

    async def pause(self, *, ref: str) -> api.Decision:
        return await self._set_state(ref, "pause")

    async def unpause(self, *, ref: str) -> api.Decision:
        return await self._set_state(ref, "unpause")

    async def retire(self, *, ref: str) -> api.Decision:
        return await self._set_state(ref, "retire")

    async def unretire(self, *, ref: str) -> api.Decision:
        return await self._set_state(ref, "unretire")

    async def _set_state(self, ref: str, action: str) -> api.Decision:
        row = await self.resolve(ref)
        allowed = {
            "pause": (row["paused"] == 0 and not row["retired"], HeinzelPaused()),
            "unpause": (row["paused"] == 1, HeinzelUnpaused()),
            "retire": (row["retired"] == 0, HeinzelRetired()),
            "unretire": (row["retired"] == 1, HeinzelUnretired()),
        }
        ok, event = allowed[action]
        if not ok:
            raise UsageError(
                "HZU040", f"cannot {action} a heinzel that is {row['state']}", row["name"]
            )
        async with self.holding(row["id"]) as held:
            await held.append(event)
            return api.Decision(heinzel=held.id, what=action, state=_state(held))

    async def rename(self, *, ref: str, name: str) -> api.Decision:
        if not _SLUG.match(name):
            raise UsageError("HZU041", "a name is a slug: a-z, 0-9 and '-', 2-63 long", name[:80])
        row = await self.resolve(ref)
        await self._check_name_free(name, row["namespace"], exclude=row["id"])
        async with self.holding(row["id"]) as held:
            await held.append(HeinzelRenamed(name=name, previous=row["name"]))
            return api.Decision(heinzel=held.id, what="rename", state=_state(held))


def _asset_identity(asset: str, resolve: Callable[[str], Path]) -> tuple[str, str | None]:
    """The file an asset ref names, as an absolute path under the documents root, and its anchor."""
    path, _, anchor = asset.removeprefix("doc:").partition("#")
    return os.path.abspath(resolve(path)), anchor or None


def _like_tail(asset: str) -> str:
    """A LIKE pattern for refs that end in the same file name and anchor (a cheap first cut)."""
    path, hashmark, anchor = asset.removeprefix("doc:").partition("#")
    tail = path.rsplit("/", 1)[-1] + hashmark + anchor
    escaped = tail.replace("!", "!!").replace("%", "!%").replace("_", "!_")
    return "%" + escaped


def _name(held: HeldSession) -> str:
    return str(held.projection.heinzel["name"])


def _state(held: HeldSession) -> str:
    return str(held.projection.heinzel["state"])


def _last_proposal(held: HeldSession) -> str:
    for event in reversed(held.scan.events):
        if event.kind == "contract.proposed" and event.data.get("proposal"):
            return str(event.data["proposal"])
    raise HzError("HZC085", "no proposed contract found in the spine", held.id)


def _current_contract(held: HeldSession) -> CompiledContract | None:
    version = held.projection.heinzel["contract_version"]
    if version is None:
        return None
    return ContractVersions(held.dir).read(int(version))[1]


def template_list() -> api.TemplateList:
    """The shipped contract templates: what the kernel answers and ``hz heinzel templates``
    prints without opening a kernel (a read that leaves every home as it was)."""
    return api.TemplateList(
        items=[
            api.TemplateSummary(
                name=t.name,
                description=t.description,
                parameters=[p.name for p in t.parameters],
                details=[
                    api.TemplateParameter(
                        name=p.name, default=p.default, help=p.help, optional=p.optional
                    )
                    for p in t.parameters
                ],
            )
            for t in list_templates()
        ]
    )
