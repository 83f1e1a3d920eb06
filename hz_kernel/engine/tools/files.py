"""``files:read``: read a file, list a folder and search text under the granted roots.

Every open is non-blocking and checked with ``fstat`` before a byte is read,
so a FIFO, a device or a folder named as a file is refused with a code and
never hangs the turn. The search is plain Python (no ``rg``), bounded in
files, bytes and hits; it does not enter linked folders and reads a linked
file only when the link stays inside a granted root.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from pydantic import Field

from hz_kernel.adapters.sources.base import OUTPUT_CAP_BYTES
from hz_kernel.engine.tools.base import (
    BAD_ARGUMENTS,
    NOT_READABLE,
    ToolArgs,
    ToolRegistry,
    ToolSpec,
    refused,
)
from hz_kernel.engine.tools.grant import Grant
from hz_kernel.errors import HzError

MAX_LISTED = 1000
MAX_SEARCHED_FILES = 5000
MAX_SEARCHED_BYTES = 16 << 20
MAX_LINE_CHARS = 400


class ReadFileArgs(ToolArgs):
    path: str = Field(description="a file under a granted folder, or a granted file")


class ListFolderArgs(ToolArgs):
    path: str = Field(description="a granted folder or a folder under one")


class SearchArgs(ToolArgs):
    pattern: str = Field(min_length=1, max_length=200, description="a Python regular expression")
    path: str = Field(description="a granted folder (or a file or folder under one)")
    max_hits: int = Field(default=50, ge=1, le=200)


def read_text(path: Path, place: str) -> str:
    """A regular file's text (at most 1 MiB); anything else is refused, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise refused(NOT_READABLE, "a folder, not a file: list it instead", place) from None
    except OSError as exc:
        raise refused(NOT_READABLE, f"cannot open the file: {exc.strerror}", place) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise refused(NOT_READABLE, "a folder, not a file: list it instead", place)
        if not stat.S_ISREG(mode):
            raise refused(NOT_READABLE, "not a regular file (a FIFO, socket or device)", place)
        os.set_blocking(fd, True)
        data = os.read(fd, OUTPUT_CAP_BYTES + 1)
    except OSError as exc:
        raise refused(NOT_READABLE, f"cannot read the file: {exc.strerror}", place) from None
    finally:
        os.close(fd)
    if len(data) > OUTPUT_CAP_BYTES:
        raise refused(NOT_READABLE, f"over {OUTPUT_CAP_BYTES} bytes: search it instead", place)
    if b"\0" in data:
        raise refused(NOT_READABLE, "a binary file", place)
    return data.decode("utf-8", errors="replace")


def read_file(args: ToolArgs, grant: Grant) -> str:
    assert isinstance(args, ReadFileArgs)
    return read_text(grant.file_or_folder(args.path), args.path)


def list_folder(args: ToolArgs, grant: Grant) -> str:
    """One line per entry: folders end in ``/``, files show their size, links their target."""
    assert isinstance(args, ListFolderArgs)
    folder = grant.file_or_folder(args.path)
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except NotADirectoryError:
        raise refused(NOT_READABLE, "a file, not a folder: read it instead", args.path) from None
    except OSError as exc:
        raise refused(NOT_READABLE, f"cannot list the folder: {exc.strerror}", args.path) from None
    lines = []
    for entry in entries[:MAX_LISTED]:
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            lines.append(f"{entry.name}/")
        elif stat.S_ISLNK(info.st_mode):
            lines.append(f"{entry.name} -> {os.readlink(entry.path)}")
        elif stat.S_ISREG(info.st_mode):
            lines.append(f"{entry.name}  {info.st_size} bytes")
        else:
            lines.append(f"{entry.name}  (not a regular file)")
    if len(entries) > MAX_LISTED:
        lines.append(f"[hz: {len(entries) - MAX_LISTED} more entries not listed]")
    return "\n".join(lines) if lines else "(empty folder)"


def search(args: ToolArgs, grant: Grant) -> str:
    """``path:line: text`` per matching line, in path order, up to ``max_hits``."""
    assert isinstance(args, SearchArgs)
    try:
        pattern = re.compile(args.pattern)
    except re.error as exc:
        raise refused(BAD_ARGUMENTS, f"not a regular expression: {exc}", args.pattern) from None
    start = grant.file_or_folder(args.path)
    roots = [Path(os.path.realpath(folder)) for folder in grant.folders]
    hits: list[str] = []
    files = scanned = 0
    base = start.parent if start.is_file() else start
    for path, real in _walk(start, roots):
        files += 1
        if files > MAX_SEARCHED_FILES or scanned > MAX_SEARCHED_BYTES:
            hits.append(f"[hz: stopped after {files - 1} files and {scanned} bytes]")
            break
        try:
            text = read_text(real, str(path))
        except HzError:
            continue  # an unreadable file is passed over, as rg does
        scanned += len(text)
        shown = os.path.relpath(path, base)
        for number, line in enumerate(text.splitlines(), 1):
            clipped = line[:MAX_LINE_CHARS]
            if pattern.search(clipped):
                hits.append(f"{shown}:{number}: {clipped}")
                if len(hits) >= args.max_hits:
                    hits.append(f"[hz: stopped at {args.max_hits} hits]")
                    return "\n".join(hits)
    return "\n".join(hits) if hits else "no match"


def _walk(start: Path, roots: list[Path]) -> list[tuple[Path, Path]]:
    """(path, real path) of the regular files under ``start`` in path order; a link counts
    only when it leads to a file inside a root."""
    if start.is_file():
        return [(start, start)]
    found: list[tuple[Path, Path]] = []
    stack = [start]
    while stack and len(found) <= MAX_SEARCHED_FILES:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name, reverse=True)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                found.append((Path(entry.path), Path(entry.path)))
            elif entry.is_symlink():
                real = Path(os.path.realpath(entry.path))
                if real.is_file() and any(real.is_relative_to(root) for root in roots):
                    found.append((Path(entry.path), real))
    return sorted(found, key=lambda pair: os.path.relpath(pair[0], start))


def register(registry: ToolRegistry) -> None:
    registry.register(
        ToolSpec(
            name="read_file",
            capability="files:read",
            description="Read a text file (up to 1 MiB) under the folders your inputs name.",
            args=ReadFileArgs,
            run=read_file,
        )
    )
    registry.register(
        ToolSpec(
            name="list_folder",
            capability="files:read",
            description="List a folder under the folders your inputs name.",
            args=ListFolderArgs,
            run=list_folder,
        )
    )
    registry.register(
        ToolSpec(
            name="search",
            capability="files:read",
            description=(
                "Search the text files under a granted folder for a regular expression; "
                "answers path:line: text, up to max_hits lines."
            ),
            args=SearchArgs,
            run=search,
        )
    )
