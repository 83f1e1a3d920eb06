"""Issue 18 item 3: ``hz graph`` on the worked example, against a golden file.

Priya's weekly report (the ``weekly-report`` template over a real repository
and a notes folder) has drafted once; an ``exec-summary`` heinzel declares
that it reads the report's section and has not run yet. The graph must show
weekly-report reading the tracker (merged pull requests) and the notes and
writing the report section, each declared and observed; exec-summary's read
declared only, and its dependency on weekly-report through that section.
Ids, turn ids and the temporary root are replaced before the comparison;
``HZ_UPDATE_GOLDEN=1`` rewrites the file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.env import hz_env
from tests.support.homes import checkout_repo, make_world

GOLDEN = Path(__file__).parent / "golden" / "graph_weekly_report.json"
NOW = "2026-10-30T15:00:00Z"
HZ = [sys.executable, "-m", "hz_kernel.cli"]

EXEC_SUMMARY = """---
name: exec-summary
description: "A three-line summary of the weekly report for the leadership page."
hz:
  inputs:
    weekly:
      source: document
      method: section
      args:
        path: reports/weekly.md
        anchor: this-week
  requires: [documents:read, documents:write]
  publishes:
    - capability: documents.place_draft
      asset: "doc:reports/leadership.md#checkout"
  approvers: [owner]
  agent:
    model: local
---
# Executive summary

### Goal

Three lines on what Checkout shipped this week, from the weekly report.
"""


def _hz(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*HZ, *args], capture_output=True, text=True, env=hz_env(home, HZ_NOW=NOW), timeout=120
    )
    assert done.returncode == 0, (args, done.stderr)
    return done


@pytest.fixture
def worked(tmp_path: Path) -> tuple[Path, Path]:
    world = make_world(tmp_path)
    (world.notes / "monday.md").write_text("# Monday\n- fixed the login bug CHK-101\n")
    repo = checkout_repo(world)
    _hz(
        world.home, "heinzel", "new", "--template", "weekly-report",
        "--param", f"repo={repo}", "--param", "notes=notes",
        "--param", "document=reports/weekly.md", "--param", "model=local",
    )  # fmt: skip
    _hz(world.home, "approve", "weekly-report")
    _hz(world.home, "heinzel", "wake", "weekly-report")
    contract = tmp_path / "exec-summary.prose.md"
    contract.write_text(EXEC_SUMMARY)
    _hz(world.home, "heinzel", "new", str(contract))
    _hz(world.home, "approve", "exec-summary")
    return world.home, tmp_path


def _normalised(text: str, root: Path) -> dict[str, object]:
    text = text.replace(str(root), "<root>")
    text = re.sub(r"hz-[0-9A-HJKMNP-TV-Z]{26}", "<heinzel-id>", text)
    text = re.sub(r"\b[0-9A-HJKMNP-TV-Z]{26}\b", "<turn>", text)
    return json.loads(text)


def test_hz_graph_json_on_the_worked_example_equals_the_golden_file(
    worked: tuple[Path, Path],
) -> None:
    home, root = worked
    graph = _normalised(_hz(home, "graph", "--json").stdout, root)
    if os.environ.get("HZ_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(graph, indent=2, sort_keys=True) + "\n")
    assert graph == json.loads(GOLDEN.read_text())


def test_hz_graph_filters_and_text_say_declared_and_observed_apart(
    worked: tuple[Path, Path],
) -> None:
    home, _ = worked
    only = json.loads(_hz(home, "graph", "--heinzel", "exec-summary", "--json").stdout)
    assert {e["relation"] for e in only["edges"]} == {"reads", "writes", "depends_on"}
    assert all(e["declared"] and not e["observed"] for e in only["edges"])
    by_asset = json.loads(
        _hz(home, "graph", "--asset", "doc:reports/weekly.md#this-week", "--json").stdout
    )
    assert {(e["source"], e["relation"]) for e in by_asset["edges"]} == {
        ("heinzel:weekly-report", "writes"),
        ("heinzel:exec-summary", "reads"),
        ("heinzel:exec-summary", "depends_on"),
    }
    text = _hz(home, "graph").stdout
    assert "weekly-report\n" in text and "exec-summary\n" in text
    assert re.search(r"reads +files:notes/\*\*/\*\.md +declared · observed in 1 turn", text)
    assert re.search(r"needs +weekly-report +declared · not observed yet via doc:", text)
    unknown = subprocess.run(
        [*HZ, "graph", "--heinzel", "nobody"],
        capture_output=True,
        text=True,
        env=hz_env(home, HZ_NOW=NOW),
        timeout=60,
    )
    assert unknown.returncode == 2 and unknown.stderr.startswith("HZU010: nobody: ")
    bare = json.loads(_hz(home, "graph", "--asset", "reports/weekly.md#this-week", "--json").stdout)
    assert bare == by_asset, "an asset is found with or without its doc: prefix"
    for flag, value in (("--asset", "doc:nothing.md"), ("--source", "source:nothing")):
        nothing = subprocess.run(
            [*HZ, "graph", flag, value],
            capture_output=True,
            text=True,
            env=hz_env(home, HZ_NOW=NOW),
            timeout=60,
        )
        assert nothing.returncode == 2, (flag, nothing.stdout)
        assert nothing.stderr.startswith(f"HZU010: {value}: no heinzel reads or writes this ")
