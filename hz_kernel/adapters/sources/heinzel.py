"""The ``heinzel`` source: the text the user last approved of another heinzel's output.

This is how heinzels chain. A reader names its upstream and one of its
outputs and sees what the user approved there, never a draft that still
waits: the approval's record decides, not the document, which may hold a
new draft under its DRAFT tag. The fingerprint is the approval's material
fingerprint (``approval.observed.output_fp``, whitespace-insensitive), so a
reader wakes when an approval changed the text and at no other time.

The upstream is found by name in the index, which also knows its latest
approved draft and the approval turn that saw it. The text comes from that
turn's body; if the body is gone, from the document while the section of
that key still holds the same text.
"""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from pydantic import BaseModel, ConfigDict, Field

from hz_kernel.adapters.documents import MarkdownDocuments
from hz_kernel.adapters.sources.base import FetchResult, SourceRequest, resolve_path
from hz_kernel.errors import HzError
from hz_kernel.store.bodies import read_body

FACET = "approved"

#: The heinzel a name means: the one that has it now, else one that had it before a rename.
_UPSTREAM = """
SELECT id, json_extract(hz, '$.outputs') FROM heinzels
WHERE name = ?1 OR EXISTS (SELECT 1 FROM json_each(aliases) WHERE value = ?1)
ORDER BY name != ?1, id
"""
_LATEST = """
SELECT d.key, d.asset, d.output_fp, k.turn FROM drafts AS d
LEFT JOIN keys AS k ON k.heinzel = d.heinzel AND k.key = d.heinzel || '@approval:' || d.key
WHERE d.heinzel = ? AND d.output = ? AND d.status = 'approved' AND d.output_fp IS NOT NULL
ORDER BY d.decided_at DESC, d.seq DESC LIMIT 1
"""


_WAITING = """
SELECT d.placed_at FROM drafts AS d JOIN heinzels AS h ON h.id = d.heinzel
WHERE d.heinzel = ? AND d.output = ? AND d.status = 'pending' AND NOT h.retired
ORDER BY d.seq DESC LIMIT 1
"""


class ApprovedOutputArgs(BaseModel):
    """``heinzel`` is the upstream's name, ``output`` one of its contract's outputs."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    heinzel: str = Field(min_length=1)
    output: str = Field(min_length=1)


class Approval(NamedTuple):
    """The upstream's latest approved draft of one output, as the index knows it."""

    heinzel_id: str
    key: str
    asset: str
    fingerprint: str
    turn: str | None


def material_fingerprint(text: str) -> str:
    """The hash an approval records for its text: whitespace runs count as one space."""
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


class HeinzelSource:
    """Reads approved outputs of the heinzels of one home (``heinzel_root``)."""

    kind = "heinzel"
    methods = frozenset({"approved_output"})
    replay_safe = True

    def __init__(self, heinzel_root: Path | None, base_dir: Path | None = None) -> None:
        self.heinzel_root = heinzel_root
        self.base_dir = base_dir

    def fetch(
        self, request: SourceRequest, *, now: datetime, previous: FetchResult | None = None
    ) -> FetchResult:
        args = request.parse_args(ApprovedOutputArgs)
        approval = self.latest(args, request.describe())
        if approval is None:
            return FetchResult(request=request, facets={}, content={}, as_of=now)
        facets = {FACET: approval.fingerprint}
        if previous is not None and previous.cursor == approval.key and previous.facets == facets:
            return previous.model_copy(update={"as_of": now, "not_modified": True})
        text = self.approved_text(approval, args.heinzel)
        return FetchResult(
            request=request,
            facets=facets,
            content={FACET: text},
            cursor=approval.key,
            as_of=now,
        )

    def latest(self, args: ApprovedOutputArgs, place: str) -> Approval | None:
        """The upstream's latest approval of ``args.output``; None before its first."""
        found, heinzel_id = self._ask(args, place, _LATEST)
        return None if found is None else Approval(heinzel_id, *found)

    def waiting_since(self, args: ApprovedOutputArgs, place: str) -> str | None:
        """When the upstream placed a draft of ``args.output`` that still waits for the
        user (None: nothing waits, the approved text is the newest there is; a retired
        upstream's draft waits for no one)."""
        found, _ = self._ask(args, place, _WAITING)
        return None if found is None else str(found[0])

    def _ask(
        self, args: ApprovedOutputArgs, place: str, query: str
    ) -> tuple[tuple[Any, ...] | None, str]:
        """One row of ``query`` about the upstream's output, and the upstream's id."""
        if self.heinzel_root is None:
            raise HzError("HZT113", "a heinzel input is read by a kernel with a home", place)
        index = self.heinzel_root / "index.sqlite"
        try:
            conn = sqlite3.connect(f"{index.absolute().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise HzError("HZT113", f"cannot read the index ({exc})", str(index)) from None
        try:
            conn.execute("PRAGMA busy_timeout=5000")
            upstream = conn.execute(_UPSTREAM, (args.heinzel,)).fetchone()
            if upstream is None:
                raise HzError("HZT110", f"no heinzel named {args.heinzel!r}", place)
            heinzel_id, outputs = upstream
            known = sorted(orjson.loads(outputs)) if outputs else []
            if args.output not in known:
                raise HzError(
                    "HZT111",
                    f"{args.heinzel} has no output {args.output!r} (its outputs: "
                    f"{', '.join(known) or 'none'})",
                    place,
                )
            row = conn.execute(query, (heinzel_id, args.output)).fetchone()
        except sqlite3.Error as exc:
            raise HzError("HZT113", f"cannot read the index ({exc})", str(index)) from None
        finally:
            conn.close()
        found: tuple[Any, ...] | None = row
        return found, str(heinzel_id)

    def approved_text(self, approval: Approval, name: str) -> str:
        """The approved text from the approval turn's body, else from the document."""
        assert self.heinzel_root is not None
        if approval.turn is not None:
            for record in read_body(self.heinzel_root / approval.heinzel_id, approval.turn) or []:
                if record.get("type") == "input" and record.get("name") == "approved_text":
                    text = str(record.get("content", ""))
                    if material_fingerprint(text) == approval.fingerprint:
                        return text
        path = resolve_path(approval.asset.removeprefix("doc:").partition("#")[0], self.base_dir)
        try:
            seen = MarkdownDocuments().draft_state(path, approval.key, placed_text="")
        except HzError:
            seen = None
        if (
            seen is not None
            and seen.status.value == "approved"
            and material_fingerprint(seen.text or "") == approval.fingerprint
        ):
            return seen.text or ""
        raise HzError(
            "HZT112",
            f"the text last approved of {name} is no longer kept: its approval turn's body "
            "is gone and the document changed since",
            approval.key,
        )
