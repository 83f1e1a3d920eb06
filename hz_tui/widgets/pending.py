"""What one heinzel waits on the user for: its proposed contract, pending draft, question and
amendment."""

from __future__ import annotations

from datetime import datetime

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from hz_kernel.api import HeinzelDetail
from hz_tui import display, keymap
from hz_tui.turn_state import short_key


class PendingPanel(Static):
    """The pending items, or a line saying nothing waits; times as of ``now``."""

    def show(self, detail: HeinzelDetail, now: datetime) -> None:
        parts: list[Text] = []
        if detail.heinzel.state == "proposed":
            parts += self._proposal(detail)
        for draft in detail.drafts:
            if draft.status == "pending":
                parts.append(Text.assemble(("Draft ", "bold"), f"in {draft.asset or '?'}"))
                placed = f"placed {display.ago(draft.placed_at, now)}"
                parts.append(Text(f"  v{draft.contract_version or '?'} · {placed}", style="dim"))
                # The key whole (folded, never cut): it is what ``hz approve KEY`` takes.
                parts.append(Text(f"  key {short_key(draft.key)}", style="dim", overflow="fold"))
        for question in detail.questions:
            if question.status == "pending":
                parts.append(Text.assemble(("Question ", "bold"), question.question or ""))
                parts.append(Text(f"  asked {display.ago(question.asked_at, now)}", style="dim"))
        for amendment in detail.amendments:
            if amendment.status == "pending":
                by = amendment.by or "someone"
                parts.append(Text.assemble(("Amendment ", "bold"), f"proposed by {by}"))
                if amendment.reason:
                    parts.append(Text(f"  {amendment.reason}"))
                if amendment.widens:
                    parts.append(
                        Text(f"  widens: {', '.join(amendment.widens)} (needs you)", style="bold")
                    )
        if detail.pending_requests:
            count = detail.pending_requests
            parts.append(Text(f"{count} message{'s' if count != 1 else ''} in the inbox"))
        self.update(Group(*parts) if parts else Text("Nothing waits on you.", style="dim"))

    def _proposal(self, detail: HeinzelDetail) -> list[Text]:
        """A proposed heinzel does nothing until its contract is approved: say so, and how."""
        version = max(detail.contract_versions, default=1)
        overrides: dict[str, str] = getattr(self.app, "keymap_overrides", {})
        approve, read = (
            keymap.shown_keys(binding_id, overrides)
            for binding_id in ("act.approve", "heinzel.contract")
        )
        return [
            Text.assemble(("Contract ", "bold"), f"v{version} waits for your approval"),
            Text.assemble("  ", (approve, "bold"), " approve · ", (read, "bold"), " read it first"),
        ]
