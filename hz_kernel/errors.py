"""Errors a user can read: a stable code, a place and one sentence.

Every failure that reaches the command line or the wire is an ``HzError``.
Codes are grouped by the part of hz that raises them:

* ``HZS0nn`` the store (spines, bodies, inbox, index, home)
* ``HZC0nn`` contracts (parse, compile, amendments)
* ``HZE0nn`` the turn engine
* ``HZT0nn`` the tick and sources
* ``HZD0nn`` the daemon and its wire
* ``HZU0nn`` usage (unknown heinzel, bad arguments)

Codes are compatibility data: scripts match on them, so a code is never
reused for another meaning. ``docs/error-codes.md`` lists them all.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any


def echoed(text: str, keep: str = "") -> str:
    """``text`` safe to echo in an error line: every character that is not printable (C0 and
    C1 controls, bidi overrides and isolates, zero-width and other format characters, line
    separators, non-breaking and other odd spaces) shown as its ``\\uXXXX`` escape.

    Names, paths and keys in an error are the user's (or a document's) words; printed raw,
    U+202E would reverse the rest of the line and an escape sequence would drive the
    terminal. ``keep``: characters left as they are (a message's own newlines).
    """
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char in keep else _escape(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


class HzError(Exception):
    """A failure with a stable code, an optional place and a sentence for people."""

    exit_code = 1

    def __init__(self, code: str, message: str, place: str | None = None) -> None:
        message = echoed(str(message), keep="\n")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.place = None if place is None else echoed(str(place))

    def one_line(self) -> str:
        """The single line the CLI prints on stderr."""
        where = f"{self.place}: " if self.place else ""
        return f"{self.code}: {where}{self.message}".replace("\n", " ")

    def to_dict(self) -> dict[str, str | None]:
        return {"code": self.code, "message": self.message, "place": self.place}


class UsageError(HzError):
    """Wrong arguments: exit code 2, like argparse."""

    exit_code = 2


class Interrupted(HzError):
    """Ctrl-C (SIGINT) ended a command: its one coded line, and exit 130 as shells expect."""

    exit_code = 130


def interrupted() -> Interrupted:
    """Ctrl-C where no daemon was answering: a kernel in this process stops with the command."""
    return Interrupted(
        "HZU247",
        "interrupted (Ctrl-C); any turn this command was running resumes from its last step "
        "at the next wake or tick",
    )


def say_interrupted() -> int:
    """Say ``interrupted()`` on stderr; the exit code (for Ctrl-C outside a command's work:
    hz starting, reading its arguments)."""
    error = interrupted()
    sys.stderr.write(error.one_line() + "\n")
    return error.exit_code


def field_problem(error: Mapping[str, Any]) -> str:
    """What one of pydantic's errors says, without the ``Value error, `` our own validators'
    messages get: "must be one line", not "Value error, must be one line"."""
    return str(error["msg"]).removeprefix("Value error, ")
