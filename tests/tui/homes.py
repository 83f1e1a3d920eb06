"""Deterministic homes for the cockpit's tests, written through the real kernel.

Fixed ids, fixed event times and a pinned ``HZ_NOW`` make every screen the
same on every run, so snapshots compare. Contracts are compiled and stored
by the kernel's own contract code; events are appended by a real ``Kernel``
(its held session, which takes the spine lock and updates the index). The
changelog's pending draft is also in a real document under the home's
``docs`` folder (placed by the documents adapter, then edited as a user
would) with its turn body, so the review screen has a real diff to show;
the running release-notes turn has streamed part of its output, and a
message waits in its inbox.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hz_kernel.adapters.documents import MarkdownDocuments
from hz_kernel.contracts import ContractVersions, compile_contract
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import BodyWriter
from hz_kernel.store.fsutil import atomic_write
from hz_kernel.store.inbox import Inbox, InboxRequest
from hz_kernel.vocabulary import (
    AmendmentProposed,
    ApprovalObserved,
    ContractAmended,
    ContractApproved,
    ContractProposed,
    DraftPlaced,
    EventData,
    HeinzelCreated,
    HeinzelPaused,
    HeinzelRetired,
    LessonDismissed,
    LessonRecorded,
    QuestionAsked,
    StepDone,
    TurnFinished,
    TurnStarted,
)

NOW = "2026-11-20T12:00:00Z"
_NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)

CHANGELOG = "# Changelog\n\n## Unreleased\n\n## 2.3.0\n\n- Wish lists\n"
CHANGELOG_DRAFT = """\
### Added
- One-click refunds on the order page (#41)
- Search suggestions while typing (#43)

### Fixed
- Currency rounding in invoices (#38)
- Login redirect after a password reset (#40)
"""
#: The user's edit of the changelog draft: ticket numbers out, one line reworded.
CHANGELOG_EDITS = (
    (" (#41)", ""),
    (" (#43)", ""),
    ("Search suggestions while typing", "Product suggestions as you type in search"),
)
RELEASE_STREAM = (
    "## Draft\n",
    "3 items (notes: 3); new since",
    " last time: notes.\n\n### Notes\n",
)

CONTRACT = """\
---
name: {name}
description: Keeps {asset} true.
hz:
  schedule: "{schedule}"
  inputs:
    notes:
      source: files
      method: glob
      args:
        pattern: "**/*.md"
        root: notes
  requires: [files:read, documents:write]
  publishes:
    - capability: documents.place_draft
      asset: "{asset}"
  outputs:
    section:
      valid_for: 7d
  approvers: [owner]
  agent:
    model: local
    max_usd: {max_usd}
---
# {name}

### Goal

Keep {asset} true from the notes.
"""


def heinzel_id(n: int) -> str:
    """A fixed, valid heinzel id: ``hz-`` and 26 Crockford characters."""
    return f"hz-01JC0CKP1T{n:016d}"


def turn_id(heinzel: int, n: int) -> str:
    return f"01JC0CKP1T{heinzel:08d}{n:08d}"


class Writer:
    """Appends one heinzel's events at fixed times through a real kernel."""

    def __init__(self, kernel: Kernel, number: int, name: str) -> None:
        self.kernel = kernel
        self.number = number
        self.id = heinzel_id(number)
        self.name = name
        self.turns = 0

    async def event(
        self, payload: EventData, at: datetime, *, turn: str | None = None, key: str | None = None
    ) -> None:
        held = await self.kernel.session(self.id)
        await held.append(payload, turn=turn, key=key, ts=at)

    def contract(self, version: int, *, schedule: str, asset: str, max_usd: str = "0.5") -> str:
        text = CONTRACT.format(name=self.name, schedule=schedule, asset=asset, max_usd=max_usd)
        directory = self.kernel.home.heinzel_dir(self.id)
        compiled = compile_contract(text, source=f"{self.name}.prose.md")
        ContractVersions(directory).write(version, text, compiled)
        return compiled.fingerprint

    async def create(self, at: datetime, *, version: int = 1, **contract: Any) -> str:
        await self.event(HeinzelCreated(name=self.name, origin="template"), at)
        fingerprint = self.contract(version, **contract)
        await self.event(
            ContractProposed(version=1, fingerprint=fingerprint, size=400),
            at + timedelta(minutes=1),
        )
        return fingerprint

    async def turn(
        self,
        at: datetime,
        *,
        cause: str = "schedule",
        disposition: str | None = "drafted",
        report: str = "drafted 12 lines",
        usd: float = 0.12,
        version: int = 1,
        effects: list[EventData] | None = None,
    ) -> str:
        """One turn; ``disposition=None`` leaves it running after gather."""
        self.turns += 1
        turn = turn_id(self.number, self.turns)
        key = f"{self.id}@{at.strftime('%Y-%m-%dT%H:%M')}"
        started = TurnStarted(cause=cause, keys=[key], contract_version=version)  # type: ignore[arg-type]
        await self.event(started, at, turn=turn, key=key)
        await self.event(StepDone(step="gather"), at + timedelta(seconds=2), turn=turn)
        if disposition is None:
            return turn
        await self.event(
            StepDone(step="outcome", outcome=disposition, report=report),
            at + timedelta(seconds=20),
            turn=turn,
        )
        for effect in effects or []:
            await self.event(effect, at + timedelta(seconds=25), turn=turn)
        finished = TurnFinished(
            disposition=disposition,  # type: ignore[arg-type]
            causes=[cause],  # type: ignore[list-item]
            report=report,
            usd=usd,
            tokens=1200,
            duration_ms=31000,
        )
        await self.event(finished, at + timedelta(seconds=31), turn=turn)
        return turn

    def draft(self, at: datetime, asset: str, version: int = 1) -> DraftPlaced:
        key = f"{self.id}@v{version}@{at.strftime('%Y-%m-%dT%H:%M')}@{asset}"
        return DraftPlaced(key=key, asset=asset, hash="d" * 64, size=1800, contract_version=version)


def days_ago(days: float, hour: int = 15) -> datetime:
    moment = _NOW - timedelta(days=days)
    return moment.replace(hour=hour, minute=0, second=0, microsecond=0)


async def build(home: Home) -> dict[str, str]:
    """Write the standard cockpit home: ten heinzels, one in every interesting state."""
    docs = home.root / "docs"
    docs.mkdir(mode=0o700)
    atomic_write(home.settings_path, f'[documents]\nroot = "{docs}"\n'.encode())
    atomic_write(docs / "CHANGELOG.md", CHANGELOG.encode())
    kernel = await Kernel.open(home)
    try:
        return await _write_all(kernel)
    finally:
        await kernel.close()


async def _write_all(kernel: Kernel) -> dict[str, str]:
    ids: dict[str, str] = {}

    weekly = Writer(kernel, 1, "weekly-report")
    asset = "doc:reports/weekly.md#checkout"
    fp = await weekly.create(days_ago(30), schedule="0 15 * * FRI", asset=asset)
    await weekly.event(ContractApproved(version=1, fingerprint=fp), days_ago(30, 16))
    first = weekly.draft(days_ago(14), asset)
    await weekly.turn(days_ago(14), effects=[first], usd=0.31)
    await weekly.event(
        ApprovalObserved(key=first.key, share_changed=0.23, output_fp="f" * 64), days_ago(13)
    )
    lesson_turn = await weekly.turn(
        days_ago(13, 9),
        cause="approval",
        disposition="learned",
        report="two lessons from your edits",
        usd=0.05,
    )
    for lesson_id, text in (
        ("les-1", "Risks go above the summary."),
        ("les-2", "Name the epic, not the ticket numbers."),
        ("les-3", "No adjectives in headings."),
    ):
        await weekly.event(
            LessonRecorded(lesson_id=lesson_id, lesson=text, from_key=first.key),
            days_ago(13, 10),
            turn=lesson_turn,
        )
    await weekly.event(LessonDismissed(lesson_id="les-3"), days_ago(10))
    fp2 = weekly.contract(2, schedule="0 15 * * FRI", asset=asset, max_usd="0.6")
    await weekly.event(
        AmendmentProposed(
            proposal="p-1", by="user", fingerprint=fp2, reason="also read the incident notes"
        ),
        days_ago(9),
    )
    await weekly.event(ContractAmended(version=2, fingerprint=fp2, proposal="p-1"), days_ago(9, 16))
    second = weekly.draft(days_ago(7), asset, version=2)
    await weekly.turn(days_ago(7), effects=[second], version=2, usd=0.34)
    await weekly.event(
        ApprovalObserved(key=second.key, share_changed=0.05, output_fp="e" * 64), days_ago(6)
    )
    await weekly.turn(
        days_ago(0, 9),
        cause="asked",
        disposition="nothing",
        report="nothing new since Friday",
        usd=0.02,
        version=2,
    )
    ids[weekly.name] = weekly.id

    changelog = Writer(kernel, 2, "changelog")
    fp = await changelog.create(
        days_ago(20), schedule="0 9 * * *", asset="doc:CHANGELOG.md#unreleased"
    )
    await changelog.event(ContractApproved(version=1, fingerprint=fp), days_ago(20, 16))
    changelog_draft = changelog.draft(days_ago(1, 9), "doc:CHANGELOG.md#unreleased")
    changelog_turn = await changelog.turn(days_ago(1, 9), usd=0.08, effects=[changelog_draft])
    _place_edited(kernel.home, changelog, changelog_turn, changelog_draft)
    ids[changelog.name] = changelog.id

    digest = Writer(kernel, 3, "oncall-digest")
    fp = await digest.create(
        days_ago(12), schedule="0 8 * * MON", asset="doc:oncall/digest.md#week"
    )
    await digest.event(ContractApproved(version=1, fingerprint=fp), days_ago(12, 16))
    key = f"{digest.id}@q1"
    await digest.turn(
        days_ago(0, 8),
        disposition="asked",
        report="asked who owns the pager",
        usd=0.04,
        effects=[QuestionAsked(key=key, question="Who owns the pager this week: Ana or Bo?")],
    )
    ids[digest.name] = digest.id

    roadmap = Writer(kernel, 4, "roadmap-notes")
    fp = await roadmap.create(days_ago(25), schedule="0 10 1 * *", asset="doc:roadmap.md#next")
    await roadmap.event(ContractApproved(version=1, fingerprint=fp), days_ago(25, 16))
    await roadmap.turn(
        days_ago(2),
        disposition="proposed",
        report="proposed reading the planning board",
        usd=0.06,
        effects=[
            AmendmentProposed(
                proposal="p-7",
                by="heinzel",
                fingerprint="a" * 64,
                widens=["inputs.board"],
                reason="the planning board has the dates the notes lack",
            )
        ],
    )
    ids[roadmap.name] = roadmap.id

    release = Writer(kernel, 5, "release-notes")
    fp = await release.create(
        days_ago(8), schedule="0 16 * * THU", asset="doc:release/notes.md#draft"
    )
    await release.event(ContractApproved(version=1, fingerprint=fp), days_ago(8, 16))
    release_turn = await release.turn(days_ago(0, 11), cause="source-changed", disposition=None)
    body = BodyWriter(kernel.home.heinzel_dir(release.id), release_turn)
    for chunk in RELEASE_STREAM:
        body.write("chunk", text=chunk)
    body.close()
    Inbox(kernel.home.heinzel_dir(release.id)).admit(
        InboxRequest(
            request_id="cockpit-snapshot-1",
            heinzel=release.id,
            message="also mention the new pricing page",
            admitted_at=days_ago(0, 10),
        )
    )
    ids[release.name] = release.id

    docs = Writer(kernel, 6, "docs-index")
    fp = await docs.create(days_ago(40), schedule="0 7 * * *", asset="doc:docs/index.md#pages")
    await docs.event(ContractApproved(version=1, fingerprint=fp), days_ago(40, 16))
    await docs.turn(
        days_ago(5, 7), disposition="nothing", report="every page already listed", usd=0.01
    )
    await docs.event(HeinzelPaused(reason="docs freeze"), days_ago(4))
    ids[docs.name] = docs.id

    metrics = Writer(kernel, 7, "old-metrics")
    fp = await metrics.create(days_ago(90), schedule="0 6 * * *", asset="doc:metrics.md#daily")
    await metrics.event(ContractApproved(version=1, fingerprint=fp), days_ago(90, 16))
    await metrics.turn(days_ago(31, 6), disposition="drafted", usd=0.02)
    await metrics.event(HeinzelRetired(), days_ago(30))
    ids[metrics.name] = metrics.id

    okrs = Writer(kernel, 8, "team-okrs")
    await okrs.create(days_ago(0, 10), schedule="0 9 1 */3 *", asset="doc:okrs.md#quarter")
    ids[okrs.name] = okrs.id

    build_health = Writer(kernel, 9, "build-health")
    fp = await build_health.create(
        days_ago(15), schedule="0 * * * *", asset="doc:ci/health.md#today"
    )
    await build_health.event(ContractApproved(version=1, fingerprint=fp), days_ago(15, 16))
    await build_health.turn(
        days_ago(0, 11), disposition="failed", report="the model stream ended early", usd=0.03
    )
    ids[build_health.name] = build_health.id

    for heinzel in list(kernel.sessions):
        kernel.release(heinzel)
    return ids


def _place_edited(home: Home, writer: Writer, turn: str, draft: DraftPlaced) -> None:
    """Put the draft in its document as the engine does, then edit it as a user would."""
    body = BodyWriter(home.heinzel_dir(writer.id), turn)
    body.write("draft", key=draft.key, asset=draft.asset, text=CHANGELOG_DRAFT)
    body.close()
    path = home.root / "docs" / "CHANGELOG.md"
    MarkdownDocuments().place_draft(
        path,
        "unreleased",
        key=draft.key,
        heinzel_name=writer.name,
        heinzel_id=writer.id,
        contract_version=draft.contract_version,
        text=CHANGELOG_DRAFT,
    )
    text = path.read_text()
    for before, after in CHANGELOG_EDITS:
        text = text.replace(before, after)
    atomic_write(path, text.encode())
