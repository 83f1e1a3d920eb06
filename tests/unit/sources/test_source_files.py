"""The files source on a real directory tree."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from sources_helpers import NOW

from hz_kernel.adapters.sources import FetchResult, FilesSource, SourceRequest
from hz_kernel.adapters.sources.base import OUTPUT_CAP_BYTES
from hz_kernel.adapters.sources.files import MAX_MATCHES, glob_matches, matching, pattern_parts
from hz_kernel.errors import HzError


def glob(base_dir: Path, pattern: str, **extra: str) -> FetchResult:
    request = SourceRequest(source="files", method="glob", args={"pattern": pattern, **extra})
    return FilesSource(base_dir=base_dir).fetch(request, now=NOW, previous=None)


def write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)


def test_a_facet_per_file_sorted_with_the_text_as_content(tmp_path: Path) -> None:
    write(tmp_path / "notes/b.md", "bee\n")
    write(tmp_path / "notes/a.md", "ay\n")
    write(tmp_path / "notes/skip.txt", "not markdown")
    result = glob(tmp_path, "notes/*.md")
    assert list(result.facets) == ["notes/a.md", "notes/b.md"]
    assert result.facets["notes/a.md"] == hashlib.sha256(b"ay\n").hexdigest()
    assert result.content == {"notes/a.md": "ay\n", "notes/b.md": "bee\n"}
    assert result.cursor is None
    assert result.as_of == NOW


def test_editing_one_file_moves_exactly_its_facet(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        write(tmp_path / f"{name}.md", name)
    before = glob(tmp_path, "*.md")
    write(tmp_path / "b.md", "changed")
    after = glob(tmp_path, "*.md")
    moved = {name for name in before.facets if before.facets[name] != after.facets[name]}
    assert moved == {"b.md"}
    assert before.fingerprint() != after.fingerprint()
    write(tmp_path / "d.md", "new")
    added = glob(tmp_path, "*.md")
    assert set(added.facets) - set(after.facets) == {"d.md"}
    assert all(added.facets[name] == after.facets[name] for name in after.facets)


def test_double_star_spans_directories_and_skips_hidden_ones(tmp_path: Path) -> None:
    write(tmp_path / "top.md", "t")
    write(tmp_path / "a/b/deep.md", "d")
    write(tmp_path / ".git/config.md", "hidden dir")
    write(tmp_path / "a/.secret.md", "hidden file")
    assert list(glob(tmp_path, "**/*.md").facets) == ["a/b/deep.md", "top.md"]
    assert list(glob(tmp_path, "a/**").facets) == ["a/b/deep.md"]
    assert list(glob(tmp_path, "a/.*.md").facets) == ["a/.secret.md"]


def test_links_inside_the_root_are_read_and_links_out_of_it_are_not(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write(root / "real.md", "real")
    write(outside / "secret.md", "secret")
    (root / "inner.md").symlink_to(root / "real.md")
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / "linked_dir").symlink_to(outside, target_is_directory=True)
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    result = glob(root, "**/*.md")
    assert list(result.facets) == ["inner.md", "real.md"]
    assert result.content["inner.md"] == "real"
    assert "secret" not in "".join(result.content.values())


def test_binary_and_oversized_files_are_fingerprinted_but_not_shown(tmp_path: Path) -> None:
    big = b"x" * (OUTPUT_CAP_BYTES + 1)
    write(tmp_path / "big.txt", big)
    write(tmp_path / "blob.txt", b"\x00\x01\x02")
    write(tmp_path / "latin.txt", "caf\xe9".encode("latin-1"))
    result = glob(tmp_path, "*.txt")
    assert result.facets["big.txt"] == hashlib.sha256(big).hexdigest()
    assert "over the 1 MiB limit" in result.content["big.txt"]
    assert "binary" in result.content["blob.txt"]
    assert "binary" in result.content["latin.txt"]


def test_root_relative_to_base_dir_and_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "docs/x.md", "x")
    assert list(glob(tmp_path, "*.md", root="docs").facets) == ["x.md"]
    monkeypatch.setenv("HOME", str(tmp_path))
    assert list(glob(tmp_path / "elsewhere", "*.md", root="~/docs").facets) == ["x.md"]


def test_no_match_is_an_empty_input_not_an_error(tmp_path: Path) -> None:
    result = glob(tmp_path, "*.md")
    assert result.facets == {} and result.content == {}


@pytest.mark.parametrize("pattern", ["", "  ", "/etc/*", "~/x", "../*", "a/../../b", "./"])
def test_bad_globs_are_refused(tmp_path: Path, pattern: str) -> None:
    with pytest.raises(HzError) as caught:
        glob(tmp_path, pattern)
    assert caught.value.code == "HZT021"
    assert caught.value.place == str(tmp_path)


def test_missing_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HzError) as caught:
        glob(tmp_path, "*.md", root="absent")
    assert caught.value.code == "HZT020"
    write(tmp_path / "file", "not a dir")
    with pytest.raises(HzError) as caught:
        glob(tmp_path, "*.md", root="file")
    assert caught.value.code == "HZT020"


def test_a_runaway_pattern_is_refused(tmp_path: Path) -> None:
    for index in range(11):
        write(tmp_path / f"{index}.txt", "")
    request = SourceRequest(source="files", method="glob", args={"pattern": "*"})
    with pytest.raises(HzError) as caught:
        FilesSource(base_dir=tmp_path, max_matches=10).fetch(request, now=NOW, previous=None)
    assert caught.value.code == "HZT022"
    assert "more than 10 files" in caught.value.message
    wider = FilesSource(base_dir=tmp_path, max_matches=11).fetch(request, now=NOW, previous=None)
    assert len(wider.facets) == 11
    assert FilesSource().max_matches == MAX_MATCHES


@pytest.mark.parametrize(
    "pattern",
    ["*.md", "**/*.md", "**", "daily/*.md", "*/*.md", "**/daily/*.md", "notes/**", ".hidden/*"],
)
def test_glob_matches_says_what_the_walk_finds(tmp_path: Path, pattern: str) -> None:
    """The path test (used before a file exists: a contract's own document) and the walk
    agree on every file of a tree with nesting, a dot-folder and a dot-file."""
    names = [
        "a.md", "b.txt", ".dot.md", "daily/mon.md", "daily/x/deep.md", "notes/n.md",
        "notes/daily/t.md", ".hidden/h.md", "x/daily/y.md",
    ]  # fmt: skip
    for name in names:
        write(tmp_path / name, "x")
    parts = pattern_parts(pattern, str(tmp_path))
    found = set(matching(tmp_path, parts, MAX_MATCHES, pattern))
    assert {n for n in names if glob_matches(parts, tuple(n.split("/")))} == found
