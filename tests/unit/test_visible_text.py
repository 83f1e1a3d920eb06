"""Text written by others never controls the terminal of whoever reads it in the cockpit.

A note, a commit message or a model's answer may hold escape sequences (clear the
screen, set the title, OSC 52 writes to the clipboard) or bidirectional overrides; the
review desk, the contract diff, the live output and the side panes show them as symbols.
"""

from __future__ import annotations

from textual.app import App

from hz_kernel.api import DraftReview
from hz_tui import display, review
from hz_tui.rows import Palette
from hz_tui.widgets.stream_view import StreamView

HOSTILE = (
    "a\x1b[2J\x1b[Hb \x1b]52;c;SGFja2VkIQ==\x07 c\x1b]0;PWNED\x07 \x9b31m d\u202eevil\r\ne\tf\x7f"
)
#: What a terminal acts on: ESC, BEL, CSI (C1), a lone CR, DEL and the right-to-left override.
ACTIVE = ("\x1b", "\x07", "\x9b", "\r", "\x7f", "\u202e")


def _inert(text: str) -> bool:
    return not any(char in text for char in ACTIVE)


def test_visible_shows_every_control_as_a_symbol_and_keeps_lines_and_tabs() -> None:
    shown = display.visible(HOSTILE)
    assert _inert(shown)
    assert "␛[2J␛[Hb" in shown and "␇" in shown and "␡" in shown and "\ufffd" in shown
    assert shown.count("\n") == 1 and "\t" in shown  # CRLF is one line break, the tab stays


def test_the_review_desk_and_the_contract_diff_draw_no_control() -> None:
    draft = DraftReview(
        key="hz-x@v1@me", heinzel="hz-x", heinzel_name="x", asset="doc:a.md#s", path="/a.md",
        status="pending", placed_text=HOSTILE, current_text=HOSTILE + "\nmore",
        approved_text=HOSTILE.upper(),
    )  # fmt: skip
    for base in ("approved", "placed"):
        before, after, _ = review.compared(draft, base)
        assert _inert(before) and _inert(after)
    assert _inert(review.draft_text(draft))
    assert _inert(review.colour_diff(["+" + HOSTILE, "-" + HOSTILE], Palette()).plain)


async def test_live_output_draws_no_control() -> None:
    app = App[None]()
    async with app.run_test():
        stream = StreamView()
        await app.screen.mount(stream)
        stream.append(HOSTILE)
        assert _inert(stream.text)
