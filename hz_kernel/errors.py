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


class HzError(Exception):
    """A failure with a stable code, an optional place and a sentence for people."""

    exit_code = 1

    def __init__(self, code: str, message: str, place: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.place = place

    def one_line(self) -> str:
        """The single line the CLI prints on stderr."""
        where = f"{self.place}: " if self.place else ""
        return f"{self.code}: {where}{self.message}".replace("\n", " ")

    def to_dict(self) -> dict[str, str | None]:
        return {"code": self.code, "message": self.message, "place": self.place}


class UsageError(HzError):
    """Wrong arguments: exit code 2, like argparse."""

    exit_code = 2
