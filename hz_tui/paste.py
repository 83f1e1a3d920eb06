"""A paste stays one paste, whatever bytes it holds; what lands in a field is text.

Textual's terminal parser (``textual._xterm_parser.XTermParser``, 8.2)
collects a bracketed paste (``ESC[200~ … ESC[201~``) one character at a
time, but an ESC inside the paste sends it into its escape-sequence branch:
the characters read there never reach the paste buffer, and the next ESC
(or 32 characters without one) re-issues them as key presses. Pasting
coloured log lines so typed them into the focused widget, a pasted line
break became Enter (a message sent), and the paste event itself carried
only the text before the first ESC, delivered last. Terminals that filter
ESC out of a paste (kitty, xterm, Alacritty) never show it; tmux's
``paste-buffer -p`` and a clipboard of captured output do.

``PasteSafeParser`` wraps that parser: inside a paste it hands an ESC on
only when it opens the closing ``ESC[201~``, and a stand-in for any other,
so the whole paste arrives as one ``Paste`` event, in order. That event
carries the paste's text (``as_text``): escape sequences (colours, titles,
clipboard writes) dropped, line ends as ``\\n``, no other control
characters, so no field (the composer, a filter, a search line) can take in
what would act on the terminal when drawn. ``install`` makes the drivers
that read a terminal (and the browser's, for ``hz serve``) build it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Generator

from textual import _xterm_parser, events
from textual._parser import ParseError, Peek1, Read1, TokenCallback
from textual._xterm_parser import BRACKETED_PASTE_END, BRACKETED_PASTE_START, XTermParser
from textual.message import Message

ESC = "\x1b"
#: The drivers that read a terminal's bytes (a terminal, an inline one, a browser's).
_DRIVERS = (
    "textual.drivers.linux_driver",
    "textual.drivers.linux_inline_driver",
    "textual.drivers.web_driver",
)
#: What an ESC inside a paste travels as through Textual's parser: a Unicode noncharacter
#: (kept for a program's internal use), turned back into ESC before the paste is cleaned.
STAND_IN = "\ufdd0"

_ESCAPES = re.compile(
    r"""
    (?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]           # CSI: colours, cursor moves, clears
    | (?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])     # OSC, DCS, SOS, PM, APC: a string ...
      .*?(?:\x07|\x1b\\|\x9c|\Z)               # ... to its terminator (or the end)
    | \x1b[ -/]*[0-~]?                         # any other escape (charsets, keypad modes)
    """,
    re.VERBOSE | re.DOTALL,
)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def as_text(pasted: str) -> str:
    """``pasted`` as a field takes it: no escape sequences or control characters, ``\\n`` lines."""
    text = pasted.replace(STAND_IN, ESC).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


class PasteSafeParser(XTermParser):
    """Textual's parser, with a bracketed paste kept whole, whatever it holds, as its text."""

    def parse(self, token_callback: TokenCallback[Message]) -> Generator[Read1 | Peek1, str, None]:
        def as_typed(token: Message) -> None:
            if isinstance(token, events.Paste):
                token = events.Paste(as_text(token.text))
            token_callback(token)

        inner = super().parse(as_typed)
        asked: Read1 | Peek1 = next(inner)
        # The last characters handed on outside a paste: a paste starts when they open one.
        tail = ""

        def hand_on(characters: str) -> None:
            # XTermParser only ever asks with read1, so each character is taken once.
            nonlocal asked
            for character in characters:
                asked = inner.send(character)

        try:
            while True:
                try:
                    if tail != BRACKETED_PASTE_START:
                        character = yield asked
                        tail = (tail + character)[-len(BRACKETED_PASTE_START) :]
                        hand_on(character)
                        continue
                    # Inside a paste: an ESC goes on only as the start of the closing marker.
                    held = yield self.read1()
                    while held[0] == ESC and BRACKETED_PASTE_END.startswith(held):
                        if held == BRACKETED_PASTE_END:
                            tail = ""
                            break
                        character = yield self.read1()
                        if character == ESC:
                            hand_on(STAND_IN + held[1:])
                            held = ESC
                        else:
                            held += character
                    hand_on(held if held == BRACKETED_PASTE_END else held.replace(ESC, STAND_IN))
                except ParseError as error:  # a timeout or the end: the inner parser's
                    asked = inner.throw(error)
        except StopIteration:
            return


def install() -> None:
    """The terminal drivers build ``PasteSafeParser``: those imported already are repointed
    (Textual names its parser per module), and the parser's own module names it for those
    imported later (the browser's, for ``hz serve``), so none is imported just for this."""
    _xterm_parser.XTermParser = PasteSafeParser  # type: ignore[misc]
    for name in _DRIVERS:
        driver = sys.modules.get(name)
        if driver is not None:
            driver.XTermParser = PasteSafeParser  # type: ignore[attr-defined]
