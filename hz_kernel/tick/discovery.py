"""Discovery: what a contract's ``discover`` hints find, and the amendment that would read it.

The tick's daily job (``TickCommands._discover``) expands each hint: a
``team:`` hint over the files on the team repository's default branch, any
other over the user's folders (``~`` expanded, a relative hint under the
documents root, as file inputs name paths). A source is named by what it
is: an absolute path, or ``team:`` and its path in the repository. It is
recorded once per heinzel (``source.discovered``) and wakes the heinzel once,
by the key ``discovered_key`` makes of it. What the discovered turn may
propose is the contract with one more input reading that source
(``amended_text``): a ``files`` input, or a ``git`` file input on the team
repository; the heinzel may propose that widening because the user
wrote the hint (``contracts.amend``). See ``docs/discovery.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import BaseModel, ConfigDict

from hz_kernel.adapters.sources.files import MAX_MATCHES, matching, segment_matches
from hz_kernel.adapters.sources.git import file_remote
from hz_kernel.contracts.compile import compile_contract
from hz_kernel.contracts.model import TEAM_HINT, ContractError, InputSpec
from hz_kernel.contracts.parse import load_frontmatter, split_frontmatter
from hz_kernel.store.fsutil import atomic_write, is_regular_file, read_nofollow

MAX_NEW_PER_DAY = 100
"""The most new sources the daily job records for one heinzel; the rest wait for the next
days (they are not recorded, so they are found again), so no hint floods a spine or a tick."""

MAX_WALKED = 200_000
"""The most folder entries one hint's walk lists (``HZT024``): a hint such as ``/**/*.conf``
is passed over rather than walking a whole disk every day."""

_WILDCARDS = frozenset("*?[")
_ESCAPED = re.compile(r"\[([*?\[])\]")
_NOT_IN_NAME = re.compile(r"[^a-z0-9_-]+")


def discovered_key(heinzel_id: str, source: str) -> str:
    """The idempotency key of the one wake a discovered source gets."""
    return f"{heinzel_id}@discovered:{hashlib.sha256(source.encode()).hexdigest()[:16]}"


# -- expanding hints -------------------------------------------------------------------------


def plainly_named(source: str) -> bool:
    """Whether a source's name can be shown as it is: no control, format (bidi) or line
    separator characters, which would hide or reorder what the user approves."""
    return not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in source)


def split_hint(hint: str) -> tuple[str, tuple[str, ...]]:
    """A folder hint's root (its leading segments without a wildcard) and the glob under it."""
    segments = hint.split("/")
    cut = next((i for i, s in enumerate(segments) if _WILDCARDS & set(s)), len(segments) - 1)
    root = "/".join(segments[:cut]) or ("/" if hint.startswith("/") else ".")
    return root, tuple(s for s in segments[cut:] if s not in ("", "."))


def folder_sources(hint: str, resolve: Callable[[str], Path]) -> list[str]:
    """The regular files a folder hint matches, as real paths (``HZT020``/``HZT022``/``HZT024``
    when its folder is missing, unreadable, or it matches or walks too much): a link or a
    ``..`` is named by the file it leads to, as the ``files`` source reads it. The walk is that
    source's: links to folders are not entered, a FIFO or a socket is no file."""
    root_text, parts = split_hint(hint)
    root = Path(os.path.abspath(resolve(root_text)))
    found = matching(root, parts, MAX_MATCHES, hint, MAX_WALKED)
    return sorted({os.path.realpath(readable) for readable in found.values()})


def team_sources(hint: str, files: Iterable[str]) -> list[str]:
    """The files of the team repository's inventory a ``team:`` hint matches, as sources."""
    parts = tuple(s for s in hint.removeprefix(TEAM_HINT).split("/") if s not in ("", "."))
    return [TEAM_HINT + path for path in files if _matches(parts, tuple(path.split("/")))]


def _matches(parts: tuple[str, ...], names: tuple[str, ...]) -> bool:
    """Glob matching of a path, as the ``files`` source walks: ``**`` spans folders (not dot
    folders), ``*`` stays inside one name."""
    if not parts:
        return not names
    head, rest = parts[0], parts[1:]
    if head == "**":
        rest = rest or ("*",)
        for skip in range(len(names)):
            if _matches(rest, names[skip:]):
                return True
            if not segment_matches("*", names[skip]):
                return False
        return False
    return bool(names) and segment_matches(head, names[0]) and _matches(rest, names[1:])


# -- the input that reads a source -----------------------------------------------------------


def _file_id(source: str) -> tuple[int, int] | None:
    """A folder source's (device, inode) when it is a regular file now, else None."""
    if not source.startswith("/"):
        return None
    try:
        found = os.stat(source)
    except (OSError, ValueError):
        return None
    return (found.st_dev, found.st_ino) if stat.S_ISREG(found.st_mode) else None


class KnownSources:
    """Sources compared by what they are, not how they are spelled: a folder source by its
    real path and, while it exists, its (device, inode), so a link, a hard link or a
    ``sub/..`` alias of a known file is that file. Other entries (team paths, input names)
    compare as they are."""

    def __init__(self, sources: Iterable[str | None] = ()) -> None:
        self._names: set[str] = set()
        self._files: set[tuple[int, int]] = set()
        for source in sources:
            if source is not None:
                self.add(source)

    def add(self, source: str) -> None:
        self._names.update((source, _real(source)))
        if (found := _file_id(source)) is not None:
            self._files.add(found)

    def __contains__(self, source: object) -> bool:
        if not isinstance(source, str):
            return False
        if source in self._names or _real(source) in self._names:
            return True
        found = _file_id(source)
        return found is not None and found in self._files


def _real(source: str) -> str:
    return os.path.realpath(source) if source.startswith("/") else source


def input_identity(
    spec: InputSpec, resolve: Callable[[str], Path], team_repo: str | None = None
) -> str | None:
    """The source an input on one file reads, else None: a ``files`` input's real path (links
    and ``..`` followed, as the source reads it); a ``git`` file input's ``team:`` and path
    when it reads the team repository ``team_repo`` (on any branch), else its repository and
    path."""
    if spec.source == "git" and spec.method == "file":
        remote = file_remote(str(spec.args.get("repo", "")), resolve("."))
        path = str(spec.args.get("path", ""))
        if team_repo is not None and remote == file_remote(team_repo, resolve(".")):
            return TEAM_HINT + path
        return f"git:{remote}:{path}"
    if spec.source != "files" or spec.method != "glob":
        return None
    pattern = str(spec.args.get("pattern", ""))
    if _WILDCARDS & set(_ESCAPED.sub("", pattern)):
        return None
    root = resolve(str(spec.args.get("root", ".")))
    return os.path.realpath(root / _ESCAPED.sub(r"\1", pattern))


def reads_as_discovered(spec: InputSpec) -> bool:
    """Whether an input on a discovered source reads it where discovery found it: a team
    file on the default branch (no branch, or ``HEAD``), never another branch of it."""
    if spec.source != "git":
        return True
    return spec.args.get("branch", "HEAD") == "HEAD"


def input_for(
    source: str, taken: Iterable[str], team_repo: str | None = None
) -> tuple[str, dict[str, Any]] | None:
    """A name and an input reading ``source``, rechecked every tick like any input: a ``files``
    input on that one file, or a ``git`` file input on the team repository ``team_repo`` as
    the contract or home names it (None without one)."""
    folder, _, file_name = source.removeprefix(TEAM_HINT).rpartition("/")
    stem = _NOT_IN_NAME.sub("-", file_name.split(".")[0].lower()).strip("-_")
    stem = re.sub(r"^[^a-z]+", "", stem)[:56] or "found"
    used = set(taken)
    name, n = stem, 2
    while name in used:
        name, n = f"{stem}-{n}", n + 1
    if source.startswith(TEAM_HINT):
        if team_repo is None:
            return None
        args = {"repo": team_repo, "path": source.removeprefix(TEAM_HINT)}
        return name, {"source": "git", "method": "file", "args": args}
    pattern = "".join(f"[{c}]" if c in _WILDCARDS else c for c in file_name)
    args = {"root": folder or "/", "pattern": pattern}
    return name, {"source": "files", "method": "glob", "args": args}


def amended_text(text: str, name: str, spec: dict[str, Any]) -> str | None:
    """The contract ``text`` with one more input, ``name`` reading as ``spec`` says.

    The line goes in beside the other inputs, so the user's comments and
    layout stay; a frontmatter laid out otherwise is written again whole.
    None when neither compiles to the contract plus exactly that input.
    """
    try:
        before = compile_contract(text, source="contract")
        split = split_frontmatter(text, "contract")
        located = load_frontmatter(split, "contract")
    except ContractError:
        return None
    wanted = {**before.hz.inputs, name: InputSpec.model_validate(spec)}
    for candidate in (
        _inserted(text, located.key_lines, name, spec),
        _rewritten(split, name, spec),
    ):
        if candidate is None:
            continue
        try:
            after = compile_contract(candidate, source="contract")
        except ContractError:
            continue
        rest_kept = after.hz.model_copy(update={"inputs": before.hz.inputs}) == before.hz
        if after.hz.inputs == wanted and rest_kept and after.body == before.body:
            return candidate
    return None


def _inserted(
    text: str, key_lines: Mapping[tuple[str | int, ...], int], name: str, spec: dict[str, Any]
) -> str | None:
    lines = text.split("\n")
    entry = f"{json.dumps(name)}: {json.dumps(spec, ensure_ascii=False)}"
    first_input = min(
        (n for path, n in key_lines.items() if len(path) == 3 and path[:2] == ("hz", "inputs")),
        default=None,
    )
    if first_input is not None:
        indent = lines[first_input - 1][
            : len(lines[first_input - 1]) - len(lines[first_input - 1].lstrip())
        ]
        inputs_at = key_lines[("hz", "inputs")]
        closing = next(n for n in range(1, len(lines)) if lines[n].rstrip() in ("---", "..."))
        at = min(
            (n - 1 for path, n in key_lines.items() if len(path) <= 2 and n > inputs_at),
            default=closing,
        )
        at = min(at, closing)
        while at > first_input and not lines[at - 1].strip():
            at -= 1
        return "\n".join([*lines[:at], indent + entry, *lines[at:]])
    if ("hz", "inputs") in key_lines:
        return None
    first_key = min(
        (n for path, n in key_lines.items() if len(path) == 2 and path[0] == "hz"), default=None
    )
    if first_key is None:
        return None
    at = first_key - 1
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    return "\n".join([*lines[:at], f"{indent}inputs:", f"{indent * 2}{entry}", *lines[at:]])


def _rewritten(split: Any, name: str, spec: dict[str, Any]) -> str | None:
    try:
        front = yaml.safe_load(split.yaml_text)
        front["hz"].setdefault("inputs", {})[name] = spec
    except (yaml.YAMLError, TypeError, KeyError, AttributeError):
        return None
    dumped = yaml.safe_dump(front, sort_keys=False, allow_unicode=True)
    return f"---\n{dumped}---\n{split.body}"


# -- what the job remembers ------------------------------------------------------------------


def discovery_path(heinzel_root: Path) -> Path:
    return heinzel_root / "discovery.json"


class DiscoveryState(BaseModel):
    """``<home>/heinzel/discovery.json``: the local day the job last ran, and the wakes it
    owes (heinzel, key) until a turn took them. The spines are the record; the job rebuilds
    the owed wakes from them each day, so losing this file loses nothing."""

    model_config = ConfigDict(defer_build=True, extra="ignore")

    day: str | None = None
    owed: list[tuple[str, str]] = []

    @classmethod
    def load(cls, path: Path) -> DiscoveryState:
        if not is_regular_file(path):
            return cls()
        try:
            return cls.model_validate_json(read_nofollow(path))
        except (OSError, ValueError):
            return cls()

    def save(self, path: Path) -> None:
        atomic_write(path, orjson.dumps(self.model_dump(mode="json")))
