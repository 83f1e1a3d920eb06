"""Fetching for a tick: each distinct input once, staged in the source cache before any wake.

Many heinzels watch the same thing (one repository, one notes folder), so
watches are grouped by the request's cache key and each group is fetched at
most once per tick, when the shortest recheck among its watchers is due (or
when a heinzel with a due schedule slot needs fresh eyes on it). The result
goes into the source cache before the tick wakes anyone, so a crash between
fetch and wake re-wakes from the cache; and a cached result that some
watcher has not yet seen (its fingerprint differs from the watcher's
``last_fp``) is used as it is instead of being fetched again.

An input of source ``heinzel`` reads another heinzel's approved output
through its own adapter, so the reader's fingerprint is the approval's and
moves only when the user approves a changed text. An input that has never
had anything to show (an upstream that approved nothing yet) is not a move.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

import orjson

from hz_kernel.adapters.sources import FetchResult, SourceRegistry, SourceRequest
from hz_kernel.contracts import duration_seconds
from hz_kernel.errors import HzError
from hz_kernel.tick.cache import SourceCache


class Watch(NamedTuple):
    """One heinzel's input as this tick sees it (a tuple: hundreds are made every tick)."""

    heinzel: str
    input: str
    request: SourceRequest
    key: str
    """The request's cache key: watches with the same key share one fetch."""
    facet: str | None
    last_fp: str | None
    recheck_s: int
    upstream: str | None = None
    """The heinzel whose output this input reads, if any (for ordering and hold-back)."""


def split_asset(asset: str) -> tuple[str, str | None]:
    """``doc:reports/weekly.md#checkout`` → (``reports/weekly.md``, ``checkout``)."""
    path, _, anchor = asset.removeprefix("doc:").partition("#")
    return path, anchor or None


def input_request(spec: Mapping[str, Any]) -> SourceRequest:
    """The request an input stands for.

    The turn engine's gather builds requests the same way, so both agree on
    the cache key and the fingerprint.
    """
    return SourceRequest(
        source=str(spec["source"]), method=str(spec["method"]), args=dict(spec.get("args") or {})
    )


def fingerprint_of(result: FetchResult, facet: str | None) -> str | None:
    """What a watcher compares: a facet's hash or the whole map's; None if the facet is absent."""
    if facet is not None and facet not in result.facets:
        return None
    return result.fingerprint(facet)


def recheck_seconds(spec: Mapping[str, Any]) -> int:
    """How often an input is polled; 0 means every tick."""
    recheck = spec.get("recheck")
    return _seconds(str(recheck)) if recheck else 0


@lru_cache(maxsize=256)
def _seconds(duration: str) -> int:
    return duration_seconds(duration)


InputShape = tuple[str, SourceRequest, str, str | None, str | None, int]
"""An input as a tick watches it: name, request, cache key, facet, ``last_fp``, recheck."""


@lru_cache(maxsize=4096)
def input_shapes(inputs_json: str) -> tuple[InputShape, ...]:
    """A heinzel's inputs (its index row's ``inputs``) as a tick watches them.

    Decoded, and their requests hashed, once per distinct text for as long
    as the process lives: hundreds of heinzels share a handful of inputs
    (and, when in step, the same ``last_fp``), and a long-lived kernel
    meets the same texts tick after tick, so decoding and hashing each row
    anew would cost more than the rest of an idle tick. Shared: read only.
    """
    shapes: list[InputShape] = []
    for name, spec in orjson.loads(inputs_json).items():
        request, key = _request_of(_marker(spec))
        shapes.append(
            (name, request, key, spec.get("facet"), spec.get("last_fp"), recheck_seconds(spec))
        )
    return tuple(shapes)


def _marker(spec: Mapping[str, Any]) -> bytes:
    """What makes two inputs the same request, as bytes (equal args in any key order)."""
    return orjson.dumps(
        [spec.get("source"), spec.get("method"), spec.get("args")], option=orjson.OPT_SORT_KEYS
    )


@lru_cache(maxsize=1024)
def _request_of(marker: bytes) -> tuple[SourceRequest, str]:
    source, method, args = orjson.loads(marker)
    request = input_request({"source": source, "method": method, "args": args})
    return request, request.cache_key()


class SourceFetcher:
    """Fetches through the registry and keeps the source cache (and a memo of it) current.

    The memo holds what was last read or written per cache key, checked
    against the file's size and mtime, so a long-lived kernel does not parse
    the same cached result every tick, nor hash it again (``fingerprints``,
    which each tick's ``Staged`` shares). Callers pass the request's cache
    key they already hold (``input_shapes``): hashing a request's canonical
    JSON anew costs more than the rest of an idle tick's look at it.
    """

    def __init__(self, cache: SourceCache, registry: SourceRegistry) -> None:
        self.cache = cache
        self.registry = registry
        self.fetches = 0
        self._memo: dict[str, tuple[tuple[int, int], FetchResult]] = {}
        self.fingerprints: Fingerprints = {}

    def cached(self, request: SourceRequest, key: str) -> FetchResult | None:
        stamp = self._stamp(key)
        if stamp is None:
            self._memo.pop(key, None)
            return None
        known = self._memo.get(key)
        if known is not None and known[0] == stamp:
            return known[1]
        result = self.cache.get(request)
        if result is not None:
            self._memo[key] = (stamp, result)
        return result

    def fetch(
        self, request: SourceRequest, key: str, *, now: datetime, previous: FetchResult | None
    ) -> FetchResult:
        """Fetch once and store the result in the cache before returning it."""
        self.fetches += 1
        result = self.registry.fetch(request, now=now, previous=previous)
        self.cache.put(result)
        stamp = self._stamp(key)
        if stamp is not None:
            self._memo[key] = (stamp, result)
        return result

    def _stamp(self, key: str) -> tuple[int, int] | None:
        try:
            st = os.stat(self.cache.path_of(key), follow_symlinks=False)
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns


Fingerprints = dict[tuple[str, str | None], tuple[FetchResult, str | None]]
"""Per cache key and facet: the result last hashed for them and its fingerprint."""


@dataclass
class Staged:
    """What this tick knows of each watched request, by cache key."""

    results: dict[str, FetchResult] = field(default_factory=dict)
    fetched: set[str] = field(default_factory=set)
    from_cache: set[str] = field(default_factory=set)
    errors: dict[str, HzError] = field(default_factory=dict)
    fingerprints: Fingerprints = field(default_factory=dict)
    """Shared with the fetcher: a result it hands out again is not hashed again."""

    def put(self, key: str, result: FetchResult) -> None:
        self.results[key] = result

    def fail(self, key: str, error: HzError) -> None:
        self.errors[key] = error
        self.results.pop(key, None)

    def fingerprint(self, key: str, facet: str | None) -> str | None:
        """The fingerprint a watcher of ``key`` compares (hashed once per result)."""
        result = self.results.get(key)
        if result is None:
            return None
        known = self.fingerprints.get((key, facet))
        if known is None or known[0] is not result:
            known = self.fingerprints[key, facet] = (result, fingerprint_of(result, facet))
        return known[1]

    def move(self, key: str, watch: Watch) -> str | None:
        """The fingerprint ``watch`` has not seen yet, or None when nothing moved for it.

        A result with no facets that its watcher never saw is not a move:
        there is nothing to show it (an upstream that approved nothing yet).
        """
        fp = self.fingerprint(key, watch.facet)
        if fp is None or fp == watch.last_fp:
            return None
        if watch.last_fp is None and not self.results[key].facets:
            return None
        return fp

    def unseen(self, key: str, watches: Iterable[Watch]) -> bool:
        """Has some watcher not seen this result yet (see ``move``)? Asked once per distinct
        facet and ``last_fp``: watchers in step (most of them) share the answer."""
        return any(
            self.move(key, watch) is not None
            for watch in {(w.facet, w.last_fp): w for w in watches}.values()
        )


def group_watches(watches: Iterable[Watch]) -> dict[str, list[Watch]]:
    groups: dict[str, list[Watch]] = {}
    for watch in watches:
        groups.setdefault(watch.key, []).append(watch)
    return groups


def is_due(watches: Sequence[Watch], cached: FetchResult | None, now: datetime) -> bool:
    """Due when never fetched, or when the shortest recheck among its watchers has passed."""
    if cached is None:
        return True
    shortest = min(w.recheck_s for w in watches)
    return shortest == 0 or (now - cached.as_of).total_seconds() >= shortest


def stage(
    fetcher: SourceFetcher,
    groups: Mapping[str, Sequence[Watch]],
    *,
    now: datetime,
    forced: set[str],
) -> Staged:
    """Decide, per request, between a staged arrival, a fetch and the cache; fetch the due ones.

    ``forced`` names cache keys a due schedule slot wants fresh (unless an
    arrival is already staged for them).
    """
    staged = Staged(fingerprints=fetcher.fingerprints)
    for key, watches in groups.items():
        request = watches[0].request
        cached = fetcher.cached(request, key)
        if cached is not None:
            staged.put(key, cached)
            if staged.unseen(key, watches):
                staged.from_cache.add(key)
                continue
        if key in forced or is_due(watches, cached, now):
            fetch_into(fetcher, staged, key, request, now=now, previous=cached)
    return staged


def fetch_into(
    fetcher: SourceFetcher,
    staged: Staged,
    key: str,
    request: SourceRequest,
    *,
    now: datetime,
    previous: FetchResult | None,
) -> None:
    """Fetch one request into ``staged``; a failing source is recorded, never raised."""
    try:
        staged.put(key, fetcher.fetch(request, key, now=now, previous=previous))
    except HzError as exc:
        staged.fail(key, exc)
        return
    staged.fetched.add(key)
    staged.from_cache.discard(key)
