"""The pure parts of discovery: hint roots, team inventory matching, the input that reads a
source, and the amended contract text that keeps the user's layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from hz_kernel.contracts import compile_contract
from hz_kernel.tick.discovery import (
    amended_text,
    input_for,
    input_identity,
    split_hint,
    team_sources,
)

BLOCK = """---
name: weekly
hz:
  # what it reads
  inputs:
    notes:
      source: files
      method: glob
      args: {pattern: "*.md", root: notes}

  requires: [files:read]
  discover: ["~/n/**/incident*.md"]
---
### Goal
Keep it.
"""


@pytest.mark.parametrize(
    ("hint", "root", "parts"),
    [
        ("~/notes/**/incident*.md", "~/notes", ("**", "incident*.md")),
        ("/srv/x/*.md", "/srv/x", ("*.md",)),
        ("*.md", ".", ("*.md",)),
        ("notes/monday.md", "notes", ("monday.md",)),
        ("/top.md", "/", ("top.md",)),
    ],
)
def test_a_hint_splits_at_its_first_wildcard(hint: str, root: str, parts: tuple[str, ...]) -> None:
    assert split_hint(hint) == (root, parts)


def test_a_team_hint_matches_the_inventory_like_the_files_source() -> None:
    files = ["docs/a.md", "docs/x/y.md", "docs/.hidden/z.md", "a.md", "docs/b.txt", "docs"]
    assert team_sources("team:docs/**/*.md", files) == ["team:docs/a.md", "team:docs/x/y.md"]
    assert team_sources("team:docs/*.md", files) == ["team:docs/a.md"]
    assert team_sources("team:**", files) == [f"team:{f}" for f in files if ".hidden" not in f]


def test_the_input_reads_exactly_the_file_even_with_wildcards_in_its_name() -> None:
    made = input_for("/home/p/notes/2026/Incident [2]*.md", ["incident-2", "notes"])
    assert made is not None
    name, spec = made
    assert name == "incident-2-2"
    compiled = compile_contract(amended_text(BLOCK, name, spec) or "", source="c")
    identity = input_identity(compiled.hz.inputs[name], Path)
    assert identity == "/home/p/notes/2026/Incident [2]*.md"
    assert input_for("team:docs/a.md", []) is None
    assert input_for("/x/2026.md", [])[0] == "found"  # type: ignore[index]


def test_the_amendment_keeps_the_users_layout_and_adds_only_the_input() -> None:
    made = input_for("/home/p/n/incident-a.md", ["notes"])
    assert made is not None
    text = amended_text(BLOCK, *made)
    assert text is not None and "# what it reads" in text
    assert text.index("incident-a") > text.index("notes:") and text.index(
        "incident-a"
    ) < text.index("requires")
    before, after = compile_contract(BLOCK, source="c"), compile_contract(text, source="c")
    assert set(after.hz.inputs) - set(before.hz.inputs) == {"incident-a"}
    assert after.hz.model_copy(update={"inputs": before.hz.inputs}) == before.hz


def test_a_contract_without_inputs_or_in_flow_style_is_amended_all_the_same() -> None:
    made = input_for("/n/incident-a.md", [])
    assert made is not None
    bare = BLOCK.replace(BLOCK[BLOCK.index("  # what") : BLOCK.index("  requires")], "")
    flow = (
        '---\nname: weekly\nhz: {requires: [files:read], discover: ["/n/*.md"]}\n'
        "---\n### Goal\nK.\n"
    )
    for text in (bare, flow):
        amended = amended_text(text, *made)
        assert amended is not None
        assert list(compile_contract(amended, source="c").hz.inputs) == ["incident-a"]


def test_a_team_file_is_read_by_a_git_file_input_on_the_team_repository() -> None:
    team = BLOCK.replace("name: weekly\n", "name: weekly\nnamespace: team\n").replace(
        "[files:read]", "[files:read, git:read]"
    )
    made = input_for("team:docs/Runbook.md", ["notes"], "~/team.git")
    assert made == (
        "runbook",
        {
            "source": "git",
            "method": "file",
            "args": {"repo": "~/team.git", "path": "docs/Runbook.md"},
        },
    )
    compiled = compile_contract(amended_text(team, *made) or "", source="c")
    spec = compiled.hz.inputs["runbook"]
    assert input_identity(spec, Path, "~/team.git") == "team:docs/Runbook.md"
    assert (
        input_identity(spec, Path, str(Path("~/team.git").expanduser())) == "team:docs/Runbook.md"
    )
    elsewhere = str(Path("~/other.git").expanduser())
    assert input_identity(spec, Path, elsewhere) == f"git:{Path.home()}/team.git:docs/Runbook.md"
