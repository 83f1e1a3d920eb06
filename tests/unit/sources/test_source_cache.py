"""The source cache on a real directory: round trips, damage, privacy and pruning."""

from __future__ import annotations

import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest
from sources_helpers import NOW

from hz_kernel.adapters.sources import FetchResult, SourceRequest
from hz_kernel.tick.cache import SourceCache


def result_for(url: str, *, days_ago: float = 0, body: str = "text") -> FetchResult:
    return FetchResult(
        request=SourceRequest(source="http", method="get", args={"url": url}),
        facets={"body": f"hash-of-{body}"},
        content={"body": body},
        cursor='"etag"',
        as_of=NOW - timedelta(days=days_ago),
    )


@pytest.fixture
def cache(tmp_path: Path) -> SourceCache:
    return SourceCache(tmp_path / "heinzel" / "sources")


def test_put_then_get_round_trips_privately(cache: SourceCache) -> None:
    result = result_for("http://example.invalid/a")
    assert cache.get(result.request) is None
    cache.put(result)
    assert cache.get(result.request) == result
    path = cache.path_for(result.request)
    assert path.name == f"{result.request.cache_key()}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.dir.stat().st_mode) == 0o700
    newer = result_for("http://example.invalid/a", body="newer")
    cache.put(newer)
    assert cache.get(result.request) == newer
    assert sorted(os.listdir(cache.dir)) == [path.name]


@pytest.mark.parametrize(
    "damage",
    [b"", b"not json", b'{"request": {"source": "http"}}', b"\xff\xfe", b'{"facets": [1, 2'],
)
def test_a_damaged_file_reads_as_absent(cache: SourceCache, damage: bytes) -> None:
    result = result_for("http://example.invalid/a")
    cache.put(result)
    cache.path_for(result.request).write_bytes(damage)
    assert cache.get(result.request) is None
    cache.put(result)
    assert cache.get(result.request) == result


def test_a_result_filed_under_another_key_reads_as_absent(cache: SourceCache) -> None:
    one = result_for("http://example.invalid/one")
    two = result_for("http://example.invalid/two")
    cache.put(one)
    cache.path_for(one.request).rename(cache.path_for(two.request))
    assert cache.get(two.request) is None


def test_links_and_fifos_are_not_read(cache: SourceCache, tmp_path: Path) -> None:
    linked = result_for("http://example.invalid/linked")
    piped = result_for("http://example.invalid/piped")
    elsewhere = SourceCache(tmp_path / "elsewhere")
    elsewhere.put(linked)
    cache.dir.mkdir(parents=True)
    cache.path_for(linked.request).symlink_to(elsewhere.path_for(linked.request))
    os.mkfifo(cache.path_for(piped.request))
    assert cache.get(linked.request) is None
    assert cache.get(piped.request) is None


def test_prune_removes_only_old_cache_files(cache: SourceCache, tmp_path: Path) -> None:
    old = result_for("http://example.invalid/old", days_ago=40)
    fresh = result_for("http://example.invalid/fresh", days_ago=1)
    damaged_old = result_for("http://example.invalid/damaged", days_ago=40)
    linked = result_for("http://example.invalid/linked", days_ago=40)
    for result in (old, fresh, damaged_old):
        cache.put(result)
    damaged_path = cache.path_for(damaged_old.request)
    damaged_path.write_bytes(b"garbage")
    long_ago = (NOW - timedelta(days=40)).timestamp()
    os.utime(damaged_path, (long_ago, long_ago))
    target = tmp_path / "target.json"
    target.write_text(linked.model_dump_json())
    os.utime(target, (long_ago, long_ago))
    cache.path_for(linked.request).symlink_to(target)
    leftover = cache.dir / f".{old.request.cache_key()}.json.4242.tmp"
    leftover.write_bytes(b"half written")
    os.utime(leftover, (long_ago, long_ago))
    foreign = [cache.dir / "notes.txt", cache.dir / f"{'A' * 64}.json", cache.dir / "x.json"]
    for path in foreign:
        path.write_text("{}")
        os.utime(path, (long_ago, long_ago))
    (cache.dir / f"{'b' * 64}.json").mkdir()

    assert cache.prune(older_than=NOW - timedelta(days=30)) == 3

    assert cache.get(old.request) is None
    assert cache.get(fresh.request) == fresh
    assert not damaged_path.exists() and not leftover.exists()
    assert cache.path_for(linked.request).is_symlink() and target.exists()
    assert all(path.exists() for path in foreign)
    assert (cache.dir / f"{'b' * 64}.json").is_dir()
    assert cache.prune(older_than=NOW - timedelta(days=30)) == 0


def test_prune_of_a_cache_never_written(cache: SourceCache) -> None:
    assert cache.prune(older_than=NOW) == 0
    assert not cache.dir.exists()
