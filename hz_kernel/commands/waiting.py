"""What of a heinzel waits on the user, and which one item a ``hz approve|reject`` names.

A ref is a draft's full key, a heinzel's name or id (its one waiting item),
or ``NAME@SHORT``: a heinzel and the short key of one of its items. A short
key is what follows the heinzel id in a draft key (``v1@…@doc:…``, the
cockpit's short form), ``amendment:<proposal>`` or ``contract:v1``. When
more than one item waits, naming the heinzel alone is refused with a list of
the refs that name each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from hz_kernel.api import proposal_short_key
from hz_kernel.errors import UsageError

if TYPE_CHECKING:
    from hz_kernel.core import KernelCore

Verb = Literal["approve", "reject"]
ItemKind = Literal["draft", "contract", "amendment"]


@dataclass(frozen=True)
class WaitingItem:
    """One thing that waits on the user: a draft, a first contract or an amendment."""

    kind: ItemKind
    key: str
    short: str


def short_key(heinzel_id: str, draft_key: str) -> str:
    """A draft key without its heinzel id (the heinzel is named beside it)."""
    return draft_key.removeprefix(f"{heinzel_id}@")


async def waiting_items(kernel: KernelCore, row: dict[str, Any], verb: Verb) -> list[WaitingItem]:
    """The items of this heinzel a ``verb`` can decide, oldest first.

    A proposed first contract is approved, never rejected (retire the heinzel
    instead), so it waits only for ``approve``.
    """
    heinzel_id = str(row["id"])
    items: list[WaitingItem] = []
    if verb == "approve" and row["state"] == "proposed" and row["proposed_version"] == 1:
        items.append(WaitingItem("contract", "v1", proposal_short_key("", first=True)))
    drafts = await kernel.index.fetch(
        "drafts",
        "SELECT key FROM drafts WHERE heinzel = ? AND status = 'pending' ORDER BY seq",
        (heinzel_id,),
    )
    items.extend(
        WaitingItem("draft", str(d["key"]), short_key(heinzel_id, str(d["key"]))) for d in drafts
    )
    amendments = await kernel.index.fetch(
        "amendments",
        "SELECT proposal FROM amendments WHERE heinzel = ? AND status = 'pending' ORDER BY seq",
        (heinzel_id,),
    )
    items.extend(
        WaitingItem(
            "amendment", str(a["proposal"]), proposal_short_key(str(a["proposal"]), first=False)
        )
        for a in amendments
    )
    return items


async def resolve_waiting(
    kernel: KernelCore, ref: str, verb: Verb
) -> tuple[dict[str, Any], WaitingItem]:
    """The heinzel row and the one item ``ref`` names (``HZU033``/``034``/``036``/``037``)."""
    name, _, short = ref.partition("@")
    row = await kernel.resolve(name)
    items = await waiting_items(kernel, row, verb)
    label = str(row["name"])
    refs = ", ".join(f"{label}@{item.short}" for item in items)
    if short:
        chosen = [item for item in items if item.short == short]
        if chosen:
            return row, chosen[0]
        if items:
            raise UsageError(
                "HZU037",
                f"no waiting item of this heinzel has that key; waiting: {refs}",
                ref[:200],
            )
    if not items:
        if verb == "approve":
            raise UsageError("HZU033", "nothing of this heinzel waits for approval", label)
        if row["state"] == "proposed":
            raise UsageError(
                "HZU034",
                "a proposed first contract cannot be declined: approve it (hz approve "
                f"{label}) or drop the heinzel (hz heinzel retire {label})",
                label,
            )
        raise UsageError("HZU034", "nothing of this heinzel waits to be declined", label)
    if len(items) > 1:
        raise UsageError("HZU036", f"{len(items)} items wait; name one: {refs}", label)
    return row, items[0]
