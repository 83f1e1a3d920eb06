"""Fetching for a tick: one fetch per input, the shortest recheck, staged arrivals, failures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from hz_kernel.adapters.sources import SourceRequest, default_registry
from hz_kernel.tick.cache import SourceCache
from hz_kernel.tick.fetching import (
    SourceFetcher,
    Watch,
    fingerprint_of,
    group_watches,
    input_request,
    stage,
)

NOW = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def _folders(root: Path, count: int) -> list[Path]:
    folders = []
    for n in range(count):
        folder = root / f"notes-{n}"
        folder.mkdir(parents=True)
        (folder / "a.md").write_text(f"# notes {n}\n")
        folders.append(folder)
    return folders


def _watch(heinzel: str, root: Path, *, recheck_s: int = 0) -> Watch:
    request = SourceRequest(
        source="files", method="glob", args={"pattern": "*.md", "root": str(root)}
    )
    return Watch(
        heinzel=heinzel,
        input="notes",
        request=request,
        key=request.cache_key(),
        facet=None,
        last_fp=None,
        recheck_s=recheck_s,
    )


def _watches(folders: list[Path], per_folder: int, *, recheck_s: int = 0) -> list[Watch]:
    return [
        _watch(f"h{n}-{m}", folder, recheck_s=recheck_s)
        for n, folder in enumerate(folders)
        for m in range(per_folder)
    ]


def _fetcher(tmp_path: Path) -> SourceFetcher:
    return SourceFetcher(SourceCache(tmp_path / "sources"), default_registry(tmp_path))


def _seen(watches: list[Watch], staged_results: dict[str, object]) -> list[Watch]:
    """The same watches after a turn saw what was fetched (their ``last_fp`` caught up)."""
    return [
        w._replace(last_fp=fingerprint_of(staged_results[w.key], w.facet))  # type: ignore[arg-type]
        for w in watches
    ]


def test_many_watchers_of_few_inputs_fetch_each_input_once(tmp_path: Path) -> None:
    folders = _folders(tmp_path, 4)
    fetcher = _fetcher(tmp_path)
    watches = _watches(folders, 25)
    staged = stage(fetcher, group_watches(watches), now=NOW, forced=set())
    assert fetcher.fetches == 4 and len(staged.fetched) == 4 and not staged.errors
    for folder, result in zip(folders, staged.results.values(), strict=True):
        assert SourceCache(tmp_path / "sources").get(result.request) == result
        assert result.request.args["root"] == str(folder)


def test_the_shortest_recheck_of_a_shared_input_decides(tmp_path: Path) -> None:
    (folder,) = _folders(tmp_path, 1)
    fetcher = _fetcher(tmp_path)
    first = stage(fetcher, group_watches(_watches([folder], 2)), now=NOW, forced=set())
    hourly = _seen(_watches([folder], 2, recheck_s=3600), first.results)
    quarter = hourly[0]._replace(heinzel="fast", recheck_s=900)
    later = NOW + timedelta(minutes=20)
    stage(fetcher, group_watches(hourly), now=later, forced=set())
    assert fetcher.fetches == 1
    stage(fetcher, group_watches([*hourly, quarter]), now=later, forced=set())
    assert fetcher.fetches == 2
    stage(fetcher, group_watches(hourly), now=later, forced={hourly[0].request.cache_key()})
    assert fetcher.fetches == 3


def test_an_arrival_nobody_saw_yet_comes_from_the_cache_not_a_second_fetch(
    tmp_path: Path,
) -> None:
    (folder,) = _folders(tmp_path, 1)
    first = _fetcher(tmp_path)
    stage(first, group_watches(_watches([folder], 3)), now=NOW, forced=set())
    assert first.fetches == 1
    (folder / "b.md").write_text("# more\n")
    again = _fetcher(tmp_path)
    staged = stage(again, group_watches(_watches([folder], 3)), now=NOW, forced=set())
    assert again.fetches == 0 and len(staged.from_cache) == 1
    (result,) = staged.results.values()
    assert sorted(result.facets) == ["a.md"]


def test_a_failing_source_is_recorded_and_the_others_still_fetched(tmp_path: Path) -> None:
    folders = _folders(tmp_path, 2)
    missing = _watch("h-missing", tmp_path / "gone")
    fetcher = _fetcher(tmp_path)
    staged = stage(fetcher, group_watches([*_watches(folders, 2), missing]), now=NOW, forced=set())
    assert len(staged.fetched) == 2
    (error,) = staged.errors.values()
    assert error.code == "HZT020"
    assert missing.key not in staged.results


def test_a_heinzel_input_stays_a_request_of_the_heinzel_source() -> None:
    """issue 12 item 6: read by its own adapter (approved text only), not as the document."""
    args = {"heinzel": "weekly", "output": "section"}
    spec = {"source": "heinzel", "method": "approved_output", "args": args}
    assert input_request(spec) == SourceRequest(
        source="heinzel", method="approved_output", args=args
    )
    plain = {"source": "git", "method": "commits", "args": {"repo": "."}}
    assert input_request(plain) == SourceRequest(source="git", method="commits", args={"repo": "."})
