"""s6: a bracketed paste holding ESC arrives as one paste event, in order, with no key presses.

Textual 8.2's ``XTermParser`` re-issued what followed an ESC inside a paste
as keys (a pasted line break was Enter) and delivered only the text before
the first ESC, last. ``hz_tui.paste.PasteSafeParser`` is the parser the
cockpit's drivers build (``paste.install``); its paste event carries the
paste's text (``as_text``), with no escape sequences or control characters.
"""

from __future__ import annotations

import pytest
from textual import events
from textual._xterm_parser import XTermParser
from textual.drivers import linux_driver
from textual.message import Message

from hz_tui import paste

COLOURED = "alpha\x1b[31mred\x1b[0m\rbravo\rcharlie"
#: What the paste of ``COLOURED`` gives a field.
TEXT = "alphared\nbravo\ncharlie"
WIRE = f"x\x1b[200~{COLOURED}\x1b[201~y"


def parsed(chunks: list[str]) -> list[Message]:
    parser = paste.PasteSafeParser()
    return [token for chunk in chunks for token in parser.feed(chunk)]


def described(tokens: list[Message]) -> list[str]:
    return [
        f"paste:{token.text}" if isinstance(token, events.Paste) else f"key:{token.key}"
        for token in tokens
        if isinstance(token, events.Paste | events.Key)
    ]


def test_textual_alone_turns_a_paste_after_its_first_esc_into_keys() -> None:
    """The cause, pinned: if Textual fixes its parser, this fails and the wrapper can go."""
    tokens = described(list(XTermParser().feed(WIRE)))
    assert "key:enter" in tokens and tokens[-2] == "paste:alpha"


@pytest.mark.parametrize("size", [len(WIRE), 1, 3, 7])
def test_a_paste_with_escapes_is_one_event_in_order_however_the_bytes_arrive(size: int) -> None:
    chunks = [WIRE[at : at + size] for at in range(0, len(WIRE), size)]
    assert described(parsed(chunks)) == ["key:x", f"paste:{TEXT}", "key:y"]


@pytest.mark.parametrize(
    "content", ["a\x1b", "a\x1b[2", "a\x1b\x1b", "\x1b[201", "\x1b[20\x1b[1~", "\x1b[200~"]
)
def test_a_paste_ending_inside_an_escape_still_ends_at_its_marker(content: str) -> None:
    tokens = parsed([f"\x1b[200~{content}\x1b[201~", "\x1b[A", "q"])
    assert described(tokens) == [f"paste:{paste.as_text(content)}", "key:up", "key:q"]


def test_escape_and_keys_outside_a_paste_read_as_textual_reads_them() -> None:
    wire = "\x1b[A\x1b[1;5Ca\x1b[<0;3;4M"
    assert described(parsed([wire])) == described(list(XTermParser().feed(wire)))
    parser = paste.PasteSafeParser()
    assert list(parser.feed("\x1b")) == []
    parser._timeout_time = 0  # the ESC waited its delay: a lone Escape key
    assert described(list(parser.tick())) == ["key:escape"]


def test_install_makes_the_terminal_driver_build_the_paste_safe_parser() -> None:
    paste.install()
    assert linux_driver.XTermParser is paste.PasteSafeParser


def test_a_field_keeps_the_text_of_a_paste_without_escapes_or_controls() -> None:
    pasted = "alpha\x1b[31mred\x1b[0m\r\nbravo\rcharlie\x1b]52;c;aGk=\x07\x1b(B\x00\tend\x1b"
    assert paste.as_text(pasted) == "alphared\nbravo\ncharlie\tend"
