"""What the review desk compares a draft with, read through the operations table.

``draft.review`` is ``draft.diff`` plus the section's last approved text and
the draft's line in its document. The approved text is the one the approval
turn read from the document (its ``approved_text`` input, in that turn's
body): the document itself no longer has it once a new draft replaced the
section. A remote cockpit has no files, so everything it shows comes from here.
"""

from __future__ import annotations

from pathlib import Path

from hz_kernel import api
from hz_kernel.adapters.documents.files import read_snapshot
from hz_kernel.adapters.documents.layout import Document
from hz_kernel.commands.turns import TurnCommands
from hz_kernel.errors import HzError
from hz_kernel.store.bodies import read_body
from hz_kernel.store.scan import scan_file
from hz_kernel.store.spine import SPINE_NAME

NEVER_APPROVED = "nothing was approved in this section before"
PRUNED = "the approval's turn body was pruned, so its text is gone"


class ReviewCommands(TurnCommands):
    """``draft.review``: a draft beside the texts a reviewer compares it with."""

    async def draft_review(self, *, key: str) -> api.DraftReview:
        diff = await self.draft_diff(key=key)
        draft = await self._draft(key)
        assert draft is not None
        approved = await self._last_approved(diff.heinzel, str(draft["asset"]), int(draft["seq"]))
        text, note = None, NEVER_APPROVED
        if approved is not None:
            text = self._approved_text(diff.heinzel, str(approved["key"]))
            note = None if text is not None else PRUNED
        return api.DraftReview(
            **diff.model_dump(),
            approved_text=text,
            approved_key=None if approved is None else str(approved["key"]),
            approved_at=None if approved is None else str(approved["decided_at"]),
            approved_note=note,
            line=_first_text_line(Path(diff.path), key),
        )

    async def _last_approved(
        self, heinzel_id: str, asset: str, seq: int
    ) -> dict[str, object] | None:
        """The heinzel's newest draft in this section that was approved before this one."""
        rows = await self.index.fetch(
            "drafts",
            "SELECT key, decided_at FROM drafts WHERE heinzel = ? AND asset = ? "
            "AND status = 'approved' AND seq < ? ORDER BY seq DESC LIMIT 1",
            (heinzel_id, asset, seq),
        )
        return rows[0] if rows else None

    def _approved_text(self, heinzel_id: str, key: str) -> str | None:
        """The ``approved_text`` input of the approval turn that saw ``key`` approved."""
        held = self.sessions.get(heinzel_id)
        events = (
            held.scan.events
            if held is not None
            else scan_file(self.home.heinzel_dir(heinzel_id) / SPINE_NAME).events
        )
        turns = [
            e.turn
            for e in events
            if e.kind == "approval.observed" and e.data.get("key") == key and e.turn
        ]
        for turn in reversed(turns):
            for record in read_body(self.home.heinzel_dir(heinzel_id), turn) or []:
                if record.get("type") == "input" and record.get("name") == "approved_text":
                    return str(record.get("content", ""))
        return None


def _first_text_line(path: Path, key: str) -> int | None:
    """The 1-based line of the section's first line of text (past its markers and tag)."""
    snapshot = read_snapshot(path)
    if snapshot is None:
        return None
    try:
        document = Document.decode(snapshot.data, str(path))
        span = document.scan().by_key(key, str(path))
    except HzError:
        return None
    if span is None:
        return None
    for index in range(span.begin + 1, span.end):
        if index not in span.tag_lines and document.content(index).strip():
            return index + 1
    return span.begin + 1
