"""What one turn's tools may reach: the contract's capabilities and the roots its inputs name.

A capability alone reaches nothing: ``files:read`` reads under the folders
(and the single files) the inputs name, ``git:read`` the repositories they
name, ``http:read`` the URLs they name, ``heinzels:read`` the upstream
outputs they name, and ``documents:read`` the sections the heinzel keeps.
A path is checked twice: as written (``..`` may not climb out) and as the
file system resolves it (a symbolic link may not lead out).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from hz_kernel.adapters.sources.base import resolve_path
from hz_kernel.contracts import CompiledContract
from hz_kernel.contracts.model import CAPABILITY_IMPLIES
from hz_kernel.engine.tools.base import BAD_ARGUMENTS, OUTSIDE_ROOTS, refused


@dataclass(frozen=True)
class KeptSection:
    """A section this heinzel keeps: its asset, the document's path and the heading's anchor."""

    asset: str
    path: Path
    anchor: str | None


#: What every turn may do whatever its contract requires: add a line to its action log.
ALWAYS_GRANTED = frozenset({"actions:report"})


@dataclass(frozen=True)
class Grant:
    """The reach of one turn's tools, from its pinned contract."""

    capabilities: frozenset[str]
    base_dir: Path
    folders: tuple[Path, ...] = ()
    files: tuple[Path, ...] = ()
    repos: tuple[Path, ...] = ()
    urls: tuple[str, ...] = ()
    upstreams: tuple[tuple[str, str], ...] = ()
    kept: tuple[KeptSection, ...] = ()
    heinzel_root: Path | None = None

    @classmethod
    def of(
        cls,
        contract: CompiledContract,
        *,
        base_dir: Path,
        heinzel_root: Path | None,
        resolve_asset: Callable[[str], tuple[Path, str | None]],
    ) -> Grant:
        capabilities = set(contract.hz.requires) | ALWAYS_GRANTED
        for capability in contract.hz.requires:
            capabilities |= CAPABILITY_IMPLIES.get(capability, frozenset())
        folders: list[Path] = []
        files: list[Path] = []
        repos: list[Path] = []
        urls: list[str] = []
        upstreams: list[tuple[str, str]] = []
        for spec in contract.hz.inputs.values():
            args = {name: str(value) for name, value in spec.args.items()}
            if spec.source == "files":
                folders.append(resolve_path(args.get("root", "."), base_dir))
            elif spec.source == "document" and "path" in args:
                files.append(resolve_path(args["path"], base_dir))
            elif spec.source == "git" and spec.method != "file" and "repo" in args:
                # A file input grants that file, read by its input, not the repository's history.
                repos.append(resolve_path(args["repo"], base_dir))
            elif spec.source == "http" and "url" in args:
                urls.append(normal_url(args["url"]))
            elif spec.source == "heinzel":
                upstreams.append((args.get("heinzel", ""), args.get("output", "")))
        kept = tuple(KeptSection(asset, *resolve_asset(asset)) for asset in contract.assets)
        return cls(
            capabilities=frozenset(capabilities),
            base_dir=base_dir,
            folders=tuple(dict.fromkeys(folders)),
            files=tuple(dict.fromkeys(files)),
            repos=tuple(dict.fromkeys(repos)),
            urls=tuple(dict.fromkeys(urls)),
            upstreams=tuple(dict.fromkeys(upstreams)),
            kept=kept,
            heinzel_root=heinzel_root,
        )

    def resolve(self, raw: str) -> Path:
        """A path argument as given (relative ones anchor where the inputs' paths do)."""
        if not raw or "\0" in raw:
            raise refused(BAD_ARGUMENTS, "the path is empty or holds a NUL character", raw)
        try:
            return Path(os.path.normpath(resolve_path(raw, self.base_dir)))
        except RuntimeError:  # ``~someone`` whose home the system does not know
            raise refused(OUTSIDE_ROOTS, "a home folder that does not exist", raw) from None

    def file_or_folder(self, raw: str) -> Path:
        """The real path of ``raw`` when it lies under a granted folder or is a granted file."""
        path = self.resolve(raw)
        real = Path(os.path.realpath(path))
        for folder in self.folders:
            lexical_root = Path(os.path.normpath(folder))
            if path.is_relative_to(lexical_root) and real.is_relative_to(os.path.realpath(folder)):
                return real
        for file in self.files:
            if path == Path(os.path.normpath(file)) and real == Path(os.path.realpath(file)):
                return real
        raise refused(
            OUTSIDE_ROOTS, "outside the folders and files this heinzel's inputs name", raw
        )

    def repo(self, raw: str) -> Path:
        """The granted repository ``raw`` names (as written, or as the file system resolves it)."""
        path = self.resolve(raw)
        real = os.path.realpath(path)
        for repo in self.repos:
            if path == Path(os.path.normpath(repo)) or real == os.path.realpath(repo):
                return Path(real)
        raise refused(OUTSIDE_ROOTS, "not a repository this heinzel's inputs name", raw)

    def url(self, raw: str) -> str:
        """``raw`` when an input names exactly that URL (its fragment aside)."""
        try:
            wanted = normal_url(raw)
        except ValueError:
            raise refused(BAD_ARGUMENTS, "not an http or https URL", raw[:200]) from None
        if wanted not in self.urls:
            raise refused(OUTSIDE_ROOTS, "not a URL this heinzel's inputs name", raw[:200])
        return wanted


def normal_url(raw: str) -> str:
    """A URL as compared with the granted ones: parsed, without its fragment."""
    try:
        url = httpx.URL(raw)
    except httpx.InvalidURL as exc:
        raise ValueError(str(exc)) from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("not an absolute http or https URL")
    return str(url.copy_with(fragment=None))
