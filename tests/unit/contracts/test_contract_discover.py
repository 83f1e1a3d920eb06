"""``hz.discover``: hints are globs on one line, a ``team:`` one needs a team heinzel and
``git:read``, a folder one ``files:read``; each mistake is one coded line naming the place."""

from __future__ import annotations

import json

import pytest

from hz_kernel.contracts import ContractError, compile_contract


def _contract(hints: object, *, namespace: str = "me", requires: str = "files:read") -> str:
    return (
        f"---\nname: weekly\nnamespace: {namespace}\nhz:\n  requires: [{requires}]\n"
        f"  discover: {json.dumps(hints)}\n---\n### Goal\nKeep it.\n"
    )


def test_hints_are_kept_sorted_and_unique() -> None:
    compiled = compile_contract(_contract(["~/b/*.md", "a/**/x*.md", "~/b/*.md"]), source="c")
    assert compiled.hz.discover == ("a/**/x*.md", "~/b/*.md")


@pytest.mark.parametrize(
    ("hints", "code", "words"),
    [
        (["~/notes/../x/*.md"], "HZC105", "may not climb out with '..'"),
        ([""], "HZC105", "a discover hint is a glob on one line"),
        (["notes/\n*.md"], "HZC105", "on one line"),
        (["x" * 513], "HZC105", "up to 512 characters"),
        (["notes/"], "HZC105", "names no files"),
        (["team:/abs/*.md"], "HZC105", "relative to the team repository's root"),
        (["team:"], "HZC105", "names no files"),
        ([f"n{i}/*.md" for i in range(21)], "HZC105", "at most 20 discover hints, not 21"),
        ("~/notes/*.md", "HZC012", "must be a list"),
        (["team:docs/*.md"], "HZC106", "belongs to a heinzel in the team namespace"),
    ],
)
def test_a_bad_hint_is_one_coded_line(hints: object, code: str, words: str) -> None:
    with pytest.raises(ContractError) as refused:
        compile_contract(_contract(hints), source="weekly.prose.md")
    line = refused.value.one_line()
    assert refused.value.code == code, line
    assert words in line and "\n" not in line
    assert refused.value.place == "weekly.prose.md:6"


def test_a_folder_hint_needs_files_read() -> None:
    with pytest.raises(ContractError) as refused:
        compile_contract(_contract(["~/n/*.md"], requires="git:read"), source="c")
    assert refused.value.code == "HZC107" and "add files:read" in refused.value.message


def test_a_team_hint_in_a_team_heinzel_needs_git_read_not_files_read() -> None:
    text = _contract(["team:docs/**/*.md"], namespace="team", requires="git:read")
    assert compile_contract(text, source="c").hz.discover == ("team:docs/**/*.md",)
    with pytest.raises(ContractError) as refused:
        compile_contract(_contract(["team:docs/*.md"], namespace="team"), source="c")
    assert refused.value.code == "HZC107" and "add git:read" in refused.value.message


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/etc/passwd", "relative to the repository's root"),
        ("docs/../../x", "without '..'"),
        ("-x", "does not name a file"),
        ("docs/", "does not name a file"),
        ("a\nb", "one line"),
    ],
)
def test_a_git_file_input_names_a_file_inside_its_repository(path: str, words: str) -> None:
    spec = json.dumps({"source": "git", "method": "file", "args": {"repo": "t.git", "path": path}})
    text = (
        f"---\nname: weekly\nnamespace: me\nhz:\n  requires: [git:read]\n"
        f"  inputs:\n    runbook: {spec}\n---\n### Goal\nKeep it.\n"
    )
    with pytest.raises(ContractError) as refused:
        compile_contract(text, source="c")
    assert refused.value.code == "HZC032" and words in refused.value.message
    assert refused.value.place == "c:7"


def test_a_git_file_input_path_is_tidied() -> None:
    spec = json.dumps(
        {"source": "git", "method": "file", "args": {"repo": "t.git", "path": "./d//a.md"}}
    )
    text = (
        f"---\nname: weekly\nnamespace: me\nhz:\n  requires: [git:read]\n"
        f"  inputs:\n    runbook: {spec}\n---\n### Goal\nKeep it.\n"
    )
    assert compile_contract(text, source="c").hz.inputs["runbook"].args["path"] == "d/a.md"
