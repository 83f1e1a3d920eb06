"""``files:read``: read a file, list a folder and search text under the granted roots.

Every open is non-blocking and checked with ``fstat`` before a byte is read,
so a FIFO, a device or a folder named as a file is refused with a code and
never hangs the turn. The search is plain Python (no ``rg``), bounded in
files, bytes, hits and time: the files are read here, and their lines are
matched in a child process (``grep_worker``) that is killed after
``SEARCH_TIMEOUT_S``, since a regular expression that backtracks badly would
otherwise hold the kernel's interpreter. It does not enter linked folders
and reads a linked file only when the link stays inside a granted root.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

from pydantic import Field

from hz_kernel.adapters.sources.base import OUTPUT_CAP_BYTES
from hz_kernel.engine.tools import grep_worker
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
#: How long the matching of one search may take before it is stopped.
SEARCH_TIMEOUT_S = 10.0


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
        name = shown_name(entry.name)
        if stat.S_ISDIR(info.st_mode):
            lines.append(f"{name}/")
        elif stat.S_ISLNK(info.st_mode):
            lines.append(f"{name} -> {shown_name(os.readlink(entry.path))}")
        elif stat.S_ISREG(info.st_mode):
            lines.append(f"{name}  {info.st_size} bytes")
        else:
            lines.append(f"{name}  (not a regular file)")
    if len(entries) > MAX_LISTED:
        lines.append(f"[hz: {len(entries) - MAX_LISTED} more entries not listed]")
    return "\n".join(lines) if lines else "(empty folder)"


def search(args: ToolArgs, grant: Grant) -> str:
    """``path:line: text`` per matching line, in path order, up to ``max_hits``."""
    assert isinstance(args, SearchArgs)
    try:
        re.compile(args.pattern)  # a bad one is refused here with its reason; matched below
    except re.error as exc:
        raise refused(BAD_ARGUMENTS, f"not a regular expression: {exc}", args.pattern) from None
    start = grant.file_or_folder(args.path)
    roots = [Path(os.path.realpath(folder)) for folder in grant.folders]
    read: list[tuple[str, str]] = []
    stopped = ""
    files = scanned = 0
    base = start.parent if start.is_file() else start
    for path, real in _walk(start, roots):
        files += 1
        if files > MAX_SEARCHED_FILES or scanned > MAX_SEARCHED_BYTES:
            stopped = f"[hz: stopped after {files - 1} files and {scanned} bytes]"
            break
        try:
            text = read_text(real, str(path))
        except HzError:
            continue  # an unreadable file is passed over, as rg does
        scanned += len(text)
        read.append((shown_name(os.path.relpath(path, base)), text))
    hits = _matched(args, read)
    if stopped and len(hits) < args.max_hits:
        hits.append(stopped)
    return "\n".join(hits) if hits else "no match"


def _matched(args: SearchArgs, files: list[tuple[str, str]]) -> list[str]:
    """The matching lines, found by ``grep_worker`` in a child process with a deadline."""
    request = {"pattern": args.pattern, "max_hits": args.max_hits, "files": files}
    try:
        done = subprocess.run(
            [sys.executable, "-I", grep_worker.__file__],
            input=json.dumps(request).encode(),
            capture_output=True,
            timeout=SEARCH_TIMEOUT_S,
            check=True,
        )
    except subprocess.TimeoutExpired:
        raise refused(
            NOT_READABLE,
            f"the search took over {SEARCH_TIMEOUT_S:g} s and was stopped: "
            "a simpler pattern (no nested repeats) finds the same lines",
            args.pattern,
        ) from None
    except subprocess.CalledProcessError as exc:
        said = exc.stderr.decode(errors="replace").strip().splitlines()[-1:]
        raise refused(NOT_READABLE, f"the search failed: {' '.join(said)}", args.pattern) from None
    return list(json.loads(done.stdout))


def shown_name(name: str) -> str:
    """A file name as one line of a listing: control characters (a newline in a name would
    forge another entry) shown as escapes."""
    return name if name.isprintable() else name.encode("unicode_escape").decode("ascii")


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
