"""Real sources behind one interface: files, git, shell, http, document and heinzel.

Each adapter turns a ``SourceRequest`` into a ``FetchResult`` of facet
fingerprints. The registry picks the adapter by ``request.source`` and
refuses unknown sources and methods with ``HZT010``, so a contract naming
something hz cannot read fails with a code, not a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from hz_kernel.adapters.sources.base import (
    FetchResult,
    SourceAdapter,
    SourceRequest,
    as_utc,
    canonical_json,
    sha256_hex,
)
from hz_kernel.adapters.sources.document import DocumentSource
from hz_kernel.adapters.sources.files import FilesSource
from hz_kernel.adapters.sources.git import GitSource
from hz_kernel.adapters.sources.heinzel import HeinzelSource
from hz_kernel.adapters.sources.http import HttpSource
from hz_kernel.adapters.sources.shell import ShellSource
from hz_kernel.errors import HzError

__all__ = [
    "DocumentSource",
    "FetchResult",
    "FilesSource",
    "GitSource",
    "HeinzelSource",
    "HttpSource",
    "ShellSource",
    "SourceAdapter",
    "SourceRegistry",
    "SourceRequest",
    "canonical_json",
    "default_registry",
    "fetch",
    "sha256_hex",
]


class SourceRegistry:
    """Adapters by kind; the one place a request is routed to its source."""

    def __init__(self, adapters: Iterable[SourceAdapter]) -> None:
        self._adapters = {adapter.kind: adapter for adapter in adapters}

    @property
    def kinds(self) -> frozenset[str]:
        """The source names this registry serves."""
        return frozenset(self._adapters)

    def adapter_for(self, request: SourceRequest) -> SourceAdapter:
        """The adapter that serves ``request``, or ``HZT010`` naming what is known."""
        adapter = self._adapters.get(request.source)
        if adapter is None:
            known = ", ".join(sorted(self._adapters))
            raise HzError(
                "HZT010", f"unknown source {request.source!r} (known: {known})", request.describe()
            )
        if request.method not in adapter.methods:
            known = ", ".join(sorted(adapter.methods))
            raise HzError(
                "HZT010",
                f"source {request.source!r} has no method {request.method!r} (known: {known})",
                request.describe(),
            )
        return adapter

    def fetch(
        self, request: SourceRequest, *, now: datetime, previous: FetchResult | None = None
    ) -> FetchResult:
        """Fetch once; ``previous`` only counts when it answered this very request."""
        adapter = self.adapter_for(request)
        if previous is not None and previous.request.cache_key() != request.cache_key():
            previous = None
        return adapter.fetch(request, now=as_utc(now), previous=previous)


def default_registry(
    base_dir: Path | None = None, heinzel_root: Path | None = None, home: Path | None = None
) -> SourceRegistry:
    """Every built-in source, with relative paths anchored at ``base_dir`` (default: cwd).

    ``heinzel_root`` is the home's ``heinzel/`` folder, where ``heinzel`` inputs
    find their upstreams; without it such an input fails with ``HZT113``. ``home``
    holds the cache a ``git`` file input is fetched into; without it that input fails.
    """
    return SourceRegistry(
        [
            FilesSource(base_dir),
            GitSource(base_dir, home),
            ShellSource(base_dir),
            HttpSource(),
            DocumentSource(base_dir),
            HeinzelSource(heinzel_root, base_dir),
        ]
    )


def fetch(
    request: SourceRequest,
    *,
    now: datetime,
    previous: FetchResult | None = None,
    base_dir: Path | None = None,
) -> FetchResult:
    """Fetch ``request`` through the built-in sources."""
    return default_registry(base_dir).fetch(request, now=now, previous=previous)
