"""What the commands print: data in JSON or aligned columns, through a standard output that
never lets a document's control characters reach the terminal."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import orjson
from pydantic import BaseModel

#: The exit code of a command whose reader went away (``hz ... | head``): 128 + SIGPIPE,
#: what a shell reports for a program that a broken pipe ended.
EXIT_BROKEN_PIPE = 141

#: Terminal control characters (C0 but newline and tab, DEL, C1) shown as ``\uXXXX``: data
#: from documents never moves the cursor or recolours the terminal, and in JSON the
#: replacement is the same string's escape.
_CONTROLS = {
    code: f"\\u{code:04x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if chr(code) not in "\n\t"
}


def shown(text: str) -> str:
    """``text`` with its terminal control characters made visible (``\\u001b``)."""
    return text.translate(_CONTROLS)


class Shown(io.TextIOBase):
    """Standard output through ``shown``, that notes when its reader has gone away."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        try:
            self.stream.write(shown(text))
        except BrokenPipeError:
            self.reader_gone = True
            raise
        return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self.reader_gone = True
            raise

    def discard(self) -> None:
        """Send what is still buffered to /dev/null, so the exit does not fail on it again."""
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self.stream.fileno())
        os.close(null)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()


def emit_json(data: Any) -> None:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def emit_rows(rows: Sequence[BaseModel]) -> None:
    """``rows`` as ``emit_json`` prints their ``model_dump(mode="json")``, for models whose
    fields hold JSON's own types (a listing's rows: no aliases, serializers or computed
    fields). orjson writes their fields as they are, so pydantic builds no serializer: the
    first one built costs a command's start an import of every package's metadata. A nested
    model (a failure, a team) is dumped by pydantic."""
    data = [row.__dict__ for row in rows]
    sys.stdout.write(
        orjson.dumps(data, default=_nested, option=orjson.OPT_INDENT_2).decode() + "\n"
    )


def _nested(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON")


def table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        line = "  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row))
        sys.stdout.write(line.rstrip() + "\n")
