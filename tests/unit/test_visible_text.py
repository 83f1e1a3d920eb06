"""Text written by others never controls the terminal of whoever reads it in the cockpit.

A note, a commit message or a model's answer may hold escape sequences (clear the
screen, set the title, OSC 52 writes to the clipboard) or bidirectional overrides; the
review desk, the contract diff, the live output and the side panes show them as symbols.
"""

from __future__ import annotations

import unicodedata

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


#: Zero-width and other invisible format characters, each hiding text or a difference.
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u2064")


def test_zero_width_and_format_characters_show_as_a_replacement_mark() -> None:
    """Attack pass (s5): "ad<ZWSP>min" read as "admin"; every invisible format character
    (Unicode category Cf) between plain letters shows as U+FFFD, as a bidi override does."""
    for char in INVISIBLE:
        assert display.visible(f"ad{char}min") == "ad\ufffdmin", hex(ord(char))
    hidden = "see" + "".join(chr(0xE0000 + ord(c)) for c in "ignore all") + " notes"
    assert display.visible(hidden) == "see" + "\ufffd" * len("ignore all") + " notes"


def test_every_format_character_of_this_pythons_unicode_is_made_visible() -> None:
    """No Cf character passes through unchanged on its own (the table covers the Unicode
    version of the Python that runs it)."""
    passed = [
        hex(code)
        for code in range(0x110000)
        if unicodedata.category(chr(code)) == "Cf" and chr(code) in display.visible(chr(code))
    ]
    assert passed == []


def test_joiners_that_build_an_emoji_or_a_word_stay() -> None:
    """ZWJ inside an emoji sequence (a family, a technologist with a skin tone, a rainbow
    flag), ZWNJ in a Persian word and a subdivision flag's tags are kept: they draw one
    glyph; a ZWJ next to only one emoji does not."""
    kept = (
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",
        "\U0001f469\U0001f3fd\u200d\U0001f4bb",
        "\U0001f3f3\ufe0f\u200d\U0001f308",
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
        "\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in "gbsct") + "\U000e007f",
    )
    for text in kept:
        assert display.visible(f"a {text} b") == f"a {text} b", text
    assert display.visible("\U0001f468\u200dx") == "\U0001f468\ufffdx"
