"""The git source against real repositories with pinned commit dates."""

from __future__ import annotations

import hashlib
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sources_helpers import NOW, GitRepo

from hz_kernel.adapters.sources import FetchResult, GitSource, SourceRequest
from hz_kernel.adapters.sources.base import OUTPUT_CAP_BYTES
from hz_kernel.errors import HzError


def log(
    repo: Path, method: str = "commits", now_shift: timedelta = timedelta(), **args: Any
) -> FetchResult:
    request = SourceRequest(source="git", method=method, args={"repo": str(repo), **args})
    return GitSource().fetch(request, now=NOW + now_shift, previous=None)


def test_commits_in_the_window_one_facet_each(git_repo: GitRepo) -> None:
    git_repo.commit("old work", days_ago=10)
    middle = git_repo.commit("fix the parser", days_ago=3)
    newest = git_repo.commit("add docs", days_ago=1)
    result = log(git_repo.path, window="7d")
    assert list(result.facets) == [newest, middle]
    assert result.cursor == newest
    line = result.content[middle]
    assert line.startswith(f"{middle[:7]} 2026-03-12T12:00:00+00:00 Ada: fix the parser")
    assert "@" not in "".join(result.content.values())
    date = "2026-03-12T12:00:00+00:00"
    expected = hashlib.sha256(f"{middle}\nfix the parser\nAda\n{date}".encode()).hexdigest()
    assert result.facets[middle] == expected


def test_a_new_commit_adds_one_facet_and_moves_the_cursor(git_repo: GitRepo) -> None:
    git_repo.commit("one", days_ago=2)
    git_repo.commit("two", days_ago=1.5)
    before = log(git_repo.path, window="7d")
    added = git_repo.commit("three", days_ago=1)
    after = log(git_repo.path, window="7d")
    assert set(after.facets) - set(before.facets) == {added}
    assert set(before.facets) <= set(after.facets)
    assert all(after.facets[sha] == before.facets[sha] for sha in before.facets)
    assert before.cursor != after.cursor
    assert after.cursor == added
    assert log(git_repo.path, window="7d").fingerprint() == after.fingerprint()


def test_the_window_follows_the_pinned_now(git_repo: GitRepo) -> None:
    early = git_repo.commit("early", days_ago=20)
    late = git_repo.commit("late", days_ago=2)
    assert list(log(git_repo.path, window="7d").facets) == [late]
    back_then = log(git_repo.path, window="7d", now_shift=-timedelta(days=15))
    assert list(back_then.facets) == [early]
    assert back_then.cursor == early
    assert list(log(git_repo.path, window="48h", now_shift=timedelta(hours=1)).facets) == []
    assert list(log(git_repo.path).facets) == [late, early]
    assert list(log(git_repo.path, limit=1).facets) == [late]


def test_merged_pull_requests_are_parsed(git_repo: GitRepo) -> None:
    git_repo.commit("base", days_ago=5)
    git_repo.git("checkout", "-q", "-b", "alice/search")
    git_repo.commit("search box", days_ago=4)
    git_repo.git("checkout", "-q", "-b", "fix-typo", "main")
    git_repo.commit("typo", days_ago=4)
    git_repo.git("checkout", "-q", "main")
    pull = git_repo.merge(
        "alice/search",
        "Merge pull request #12 from alice/search\n\nAdd a search box",
        days_ago=3,
    )
    branch = git_repo.merge("fix-typo", "Merge branch 'fix-typo'", days_ago=2)
    git_repo.commit("after the merges", days_ago=1)
    result = log(git_repo.path, method="merged_pull_requests", window="7d")
    assert list(result.facets) == [branch, pull]
    assert result.cursor == branch
    assert result.content[pull].endswith("Ada: #12 Add a search box (alice/search)")
    assert result.content[branch].endswith("Ada: branch fix-typo")


def test_a_naive_now_is_read_as_utc(git_repo: GitRepo) -> None:
    sha = git_repo.commit("recent", days_ago=1)
    request = SourceRequest(
        source="git", method="commits", args={"repo": str(git_repo.path), "window": "2d"}
    )
    naive = GitSource().fetch(request, now=NOW.replace(tzinfo=None), previous=None)
    assert list(naive.facets) == [sha]


def test_branch_and_relative_repo(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("on main", days_ago=2)
    git_repo.git("checkout", "-q", "-b", "side")
    side = git_repo.commit("on side", days_ago=1)
    git_repo.git("checkout", "-q", "main")
    request = SourceRequest(
        source="git", method="commits", args={"repo": "repo", "branch": "side", "window": "1w"}
    )
    result = GitSource(base_dir=tmp_path).fetch(request, now=NOW, previous=None)
    assert result.cursor == side and len(result.facets) == 2


def test_an_empty_repository_is_an_empty_input(git_repo: GitRepo) -> None:
    result = log(git_repo.path)
    assert result.facets == {} and result.cursor is None


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"window": "7 days"}, "HZT011"),
        ({"window": "0d"}, "HZT011"),
        ({"branch": "--output=/tmp/x"}, "HZT011"),
        ({"branch": "no-such-branch"}, "HZT031"),
    ],
)
def test_bad_arguments(git_repo: GitRepo, args: dict[str, str], code: str) -> None:
    git_repo.commit("something", days_ago=1)
    with pytest.raises(HzError) as caught:
        log(git_repo.path, **args)
    assert caught.value.code == code
    assert caught.value.place == str(git_repo.path)


def test_missing_or_non_repositories(tmp_path: Path) -> None:
    with pytest.raises(HzError) as caught:
        log(tmp_path / "absent")
    assert caught.value.code == "HZT030"
    (tmp_path / "plain").mkdir()
    with pytest.raises(HzError) as caught:
        log(tmp_path / "plain")
    assert caught.value.code == "HZT030"
    assert caught.value.place == str(tmp_path / "plain")


# -- one file of a branch ----------------------------------------------------------------------


def bare_with(git_repo: GitRepo, files: dict[str, bytes], branch: str = "main") -> Path:
    """Commit ``files`` in the working repository and push ``branch`` to a bare one beside it."""
    for name, data in files.items():
        path = git_repo.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    git_repo.git("add", "-A")
    git_repo.git("commit", "-q", "-m", "files")
    bare = git_repo.path.parent / "team.git"
    if not bare.exists():
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    git_repo.git("push", "-q", str(bare), f"HEAD:refs/heads/{branch}")
    return bare


def read_file(home: Path, repo: Path | str, path: str, **args: Any) -> FetchResult:
    request = SourceRequest(
        source="git", method="file", args={"repo": str(repo), "path": path, **args}
    )
    return GitSource(home=home).fetch(request, now=NOW, previous=None)


def test_file_reads_one_file_of_a_bare_repository_and_moves_only_on_an_edit(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    bare = bare_with(git_repo, {"docs/runbook.md": b"# Runbook\n", "other.md": b"x\n"})
    home = tmp_path / "home"
    first = read_file(home, bare, "./docs//runbook.md")
    assert first.content == {"docs/runbook.md": "# Runbook\n"}
    assert (home / "team").is_dir()
    bare_with(git_repo, {"other.md": b"y\n"})
    assert read_file(home, bare, "docs/runbook.md").fingerprint() == first.fingerprint()
    bare_with(git_repo, {"docs/runbook.md": b"# Runbook\n\nStep two.\n"})
    edited = read_file(home, f"file://{bare}", "docs/runbook.md")
    assert edited.content["docs/runbook.md"].endswith("Step two.\n")
    assert edited.fingerprint() != first.fingerprint()


def test_file_reads_a_named_branch_and_caps_what_a_turn_sees(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    big = b"a" * (OUTPUT_CAP_BYTES + 1)
    bare = bare_with(git_repo, {"big.txt": big, "blob.bin": b"\0\1"}, branch="data")
    result = read_file(tmp_path / "home", bare, "big.txt", branch="data")
    assert result.content["big.txt"].startswith(f"[hz: {len(big)} bytes, over the 1 MiB")
    binary = read_file(tmp_path / "home", bare, "blob.bin", branch="data")
    assert binary.content["blob.bin"] == "[hz: binary file of 2 bytes; not shown]"


@pytest.mark.parametrize(
    ("path", "args", "code"),
    [
        ("missing.md", {}, "HZT035"),
        ("docs", {}, "HZT035"),
        ("docs/runbook.md", {"branch": "nope"}, "HZT031"),
        ("../etc/passwd", {}, "HZT011"),
        ("-x", {}, "HZT011"),
    ],
)
def test_file_failures_are_coded(
    git_repo: GitRepo, tmp_path: Path, path: str, args: dict[str, str], code: str
) -> None:
    bare = bare_with(git_repo, {"docs/runbook.md": b"# Runbook\n"})
    with pytest.raises(HzError) as caught:
        read_file(tmp_path / "home", bare, path, **args)
    assert caught.value.code == code


def test_file_of_an_unreachable_repository_is_coded(tmp_path: Path) -> None:
    with pytest.raises(HzError) as caught:
        read_file(tmp_path / "home", tmp_path / "nowhere.git", "a.md")
    assert caught.value.code == "HZT030"
    assert caught.value.place == str(tmp_path / "nowhere.git")
