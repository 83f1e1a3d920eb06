"""The ``files`` source: the files under a root that match a glob, one facet per file.

A facet per file means an edit to one file moves exactly one fingerprint,
so a contract can watch a single file of a larger set. The walk never
leaves the root: symbolic links are used only when they point at a regular
file inside it, and linked directories are not entered (no loops).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hz_kernel.adapters.sources.base import (
    OUTPUT_CAP_BYTES,
    FetchResult,
    SourceRequest,
    resolve_path,
)
from hz_kernel.errors import HzError

MAX_MATCHES = 5000
"""More matches than this is almost surely a pattern mistake (``**`` over a home directory)."""
MAX_SHOWN_CHARS = 8 << 20
"""Past this much text in one input, further files are fingerprinted but not shown."""


class GlobArgs(BaseModel):
    """``pattern`` is relative to ``root``; ``**`` spans directories, ``*`` stays inside one."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    pattern: str
    root: str = "."


def pattern_parts(pattern: str, place: str) -> tuple[str, ...]:
    """Split a glob into path segments, refusing ones that could reach outside the root."""
    if not pattern.strip():
        raise HzError("HZT021", "the glob pattern is empty", place)
    if pattern.startswith(("/", "~")):
        raise HzError("HZT021", f"the glob {pattern!r} must be relative to its root", place)
    parts = tuple(part for part in pattern.split("/") if part not in ("", "."))
    if ".." in parts:
        raise HzError("HZT021", f"the glob {pattern!r} may not climb out with '..'", place)
    if not parts:
        raise HzError("HZT021", f"the glob {pattern!r} names no files", place)
    return parts


def segment_matches(segment: str, name: str) -> bool:
    """Match one path segment; like a shell, wildcards skip dot-files unless asked for them."""
    if name.startswith(".") and not segment.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, segment)


def glob_matches(parts: tuple[str, ...], names: tuple[str, ...]) -> bool:
    """Whether a path under the root (its segments, ``names``) is one ``matching`` would
    find for the glob ``parts``, whether or not the file exists yet."""
    if not names:
        return False
    head, rest = parts[0], parts[1:]
    if head == "**":
        return glob_matches(rest or ("*",), names) or (
            len(names) > 1 and segment_matches("*", names[0]) and glob_matches(parts, names[1:])
        )
    if not segment_matches(head, names[0]):
        return False
    return glob_matches(rest, names[1:]) if rest else len(names) == 1


class FilesSource:
    """Reads matching files under a root; relative roots resolve against ``base_dir``."""

    kind = "files"
    methods = frozenset({"glob"})
    replay_safe = True

    def __init__(self, base_dir: Path | None = None, max_matches: int = MAX_MATCHES) -> None:
        self.base_dir = base_dir
        self.max_matches = max_matches

    def fetch(
        self, request: SourceRequest, *, now: datetime, previous: FetchResult | None = None
    ) -> FetchResult:
        args = request.parse_args(GlobArgs)
        root = resolve_path(args.root, self.base_dir)
        parts = pattern_parts(args.pattern, str(root))
        matches = matching(root, parts, self.max_matches, args.pattern)
        facets: dict[str, str] = {}
        content: dict[str, str] = {}
        shown = 0
        for relative in sorted(matches):
            facets[relative], text = read_file_facet(matches[relative], relative)
            shown += len(text)
            if shown > MAX_SHOWN_CHARS:
                text = f"[hz: not shown; this input already shows {MAX_SHOWN_CHARS} characters]"
            content[relative] = text
        return FetchResult(request=request, facets=facets, content=content, as_of=now)


class _Budget:
    """How many folder entries a walk may still list (None: any); past it, ``HZT024``."""

    def __init__(self, limit: int | None, pattern: str, place: str) -> None:
        self.left, self.limit, self.pattern, self.place = limit, limit, pattern, place

    def spend(self, entries: int) -> None:
        if self.left is None:
            return
        self.left -= entries
        if self.left < 0:
            raise HzError(
                "HZT024",
                f"the glob {self.pattern!r} walks more than {self.limit} folder entries",
                self.place,
            )


def matching(
    root: Path, parts: tuple[str, ...], limit: int, pattern: str, walk_limit: int | None = None
) -> dict[str, Path]:
    """The regular files under ``root`` whose relative path matches ``parts``: each relative
    path and the path to read. More than ``limit`` matches is ``HZT022``, listing more than
    ``walk_limit`` folder entries ``HZT024``; a root that is not a folder or cannot be listed
    is ``HZT020``."""
    place = str(root)
    if not root.is_dir():
        raise HzError("HZT020", "the root is not an existing directory", place)
    real_root = Path(os.path.realpath(root))
    matches: dict[str, Path] = {}
    try:
        budget = _Budget(walk_limit, pattern, place)
        for relative, readable in _walk(root, real_root, (), parts, budget):
            matches[relative] = readable
            if len(matches) > limit:
                raise HzError(
                    "HZT022", f"the glob {pattern!r} matches more than {limit} files", place
                )
    except PermissionError as exc:
        raise HzError("HZT020", f"the root cannot be listed: {exc.strerror}", place) from None
    return matches


def _walk(
    directory: Path,
    real_root: Path,
    prefix: tuple[str, ...],
    parts: tuple[str, ...],
    budget: _Budget,
) -> Iterator[tuple[str, Path]]:
    """Yield (relative path, path to read) for each file under ``directory`` matching."""
    head, rest = parts[0], parts[1:]
    if head == "**":
        yield from _walk(directory, real_root, prefix, rest or ("*",), budget)
    entries = sorted(_scan(directory, top=not prefix), key=lambda entry: entry.name)
    budget.spend(len(entries))
    for entry in entries:
        is_dir = entry.is_dir(follow_symlinks=False)
        if head == "**":
            if is_dir and segment_matches("*", entry.name):
                yield from _walk(Path(entry.path), real_root, (*prefix, entry.name), parts, budget)
            continue
        if not segment_matches(head, entry.name):
            continue
        if rest:
            if is_dir:
                yield from _walk(Path(entry.path), real_root, (*prefix, entry.name), rest, budget)
            continue
        readable = _regular_file_inside(Path(entry.path), real_root)
        if readable is not None:
            yield "/".join((*prefix, entry.name)), readable


def _scan(directory: Path, *, top: bool) -> list[os.DirEntry[str]]:
    """List a directory; an unreadable subdirectory is passed over, an unreadable root is not."""
    try:
        with os.scandir(directory) as listing:
            return list(listing)
    except PermissionError:
        if top:
            raise
        return []
    except (FileNotFoundError, NotADirectoryError):
        return []


def _regular_file_inside(path: Path, real_root: Path) -> Path | None:
    """The path to read for a regular file, or a link to one inside the root; else None."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return path
    if not stat.S_ISLNK(mode):
        return None
    target = Path(os.path.realpath(path))
    if not target.is_relative_to(real_root):
        return None
    try:
        return target if stat.S_ISREG(os.lstat(target).st_mode) else None
    except FileNotFoundError:
        return None


def read_file_facet(path: Path, relative: str) -> tuple[str, str]:
    """Hash a whole file and return (fingerprint, text a turn may see)."""
    digest = hashlib.sha256()
    kept = bytearray()
    size = 0
    try:
        # Non-blocking, then checked: a FIFO swapped in after the listing never hangs the tick.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise HzError("HZT023", f"cannot read the file: {exc.strerror}", relative) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise HzError("HZT023", "cannot read the file: it is not a regular file", relative)
        os.set_blocking(fd, True)
        while chunk := os.read(fd, 1 << 16):
            digest.update(chunk)
            size += len(chunk)
            if len(kept) <= OUTPUT_CAP_BYTES:
                kept.extend(chunk)
    except OSError as exc:
        raise HzError("HZT023", f"cannot read the file: {exc.strerror}", relative) from None
    finally:
        os.close(fd)
    if size > OUTPUT_CAP_BYTES:
        return digest.hexdigest(), f"[hz: {size} bytes, over the 1 MiB limit; not shown]"
    if b"\0" in kept:
        return digest.hexdigest(), f"[hz: binary file of {size} bytes; not shown]"
    try:
        return digest.hexdigest(), bytes(kept).decode("utf-8")
    except UnicodeDecodeError:
        return digest.hexdigest(), f"[hz: binary file of {size} bytes; not shown]"
