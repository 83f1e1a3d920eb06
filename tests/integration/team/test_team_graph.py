"""Issue 18 item 3, with team state: ``hz graph`` shows what other homes' team heinzels wrote.

Priya's home runs the team heinzel ``weekly-report`` and pushes its receipts
to the team repository (real git, a bare repository on disk); so does a team
heinzel Theo's home has never heard of. Theo's home reads Priya's report
through a ``heinzel`` input. After a fetch (``hz team log``), Theo's graph has
weekly-report writing its section, observed on ``hz/state`` only, and the
unknown heinzel by its team id; the documents, which Theo's home cannot read,
are names only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from hz_kernel.commands.graph import GraphCommands
from hz_kernel.commands.team import team_id
from hz_kernel.config import DocumentsSettings
from hz_kernel.team.state_branch import StateBranch
from tests.support.env import hz_env
from tests.support.team import T0, hz_ok, make_team_repo, placed, theo_home


def test_the_graph_shows_other_homes_team_heinzels_from_hz_state(tmp_path: Path) -> None:
    team = make_team_repo(tmp_path)
    weekly, hidden = team_id("weekly-report"), team_id("plans")
    priya = StateBranch(tmp_path / "priya", str(team))
    priya.queue(
        [
            placed("01JDTURN01", heinzel=weekly, asset="doc:reports/weekly.md#this-week"),
            placed("01JDTURN02", heinzel=weekly, asset="doc:reports/weekly.md#this-week"),
            placed("01JDTURN03", heinzel=hidden, asset="doc:private/plans%20q4.md"),
        ]
    )
    assert priya.push_pending(now=T0).error is None
    theo = theo_home(tmp_path, team)

    before = json.loads(hz_ok(theo, "graph", "--json").stdout)
    assert {n["id"] for n in before["nodes"] if n["team_id"]} == set(), "nothing fetched yet"
    hz_ok(theo, "team", "log")
    graph = json.loads(hz_ok(theo, "graph", "--json").stdout)

    assert graph["schema_version"] == 2
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert nodes["heinzel:weekly-report"] == {
        "id": "heinzel:weekly-report",
        "kind": "heinzel",
        "label": "weekly-report",
        "heinzel": None,
        "team_id": weekly,
        "readable": None,
    }
    assert nodes[f"heinzel:{hidden}"]["team_id"] == hidden, "an unnamed one goes by its team id"
    assert nodes["asset:doc:reports/weekly.md#this-week"]["readable"] is False
    assert nodes["asset:doc:private/plans q4.md"]["readable"] is False
    edges = {(e["source"], e["relation"], e["target"]): e for e in graph["edges"]}
    wrote = edges[("heinzel:weekly-report", "writes", "asset:doc:reports/weekly.md#this-week")]
    assert (wrote["declared"], wrote["observed"]) == (False, True)
    assert (wrote["turns"], wrote["team_turns"], wrote["last_turn"]) == (2, 2, "01JDTURN02")
    needs = edges[("heinzel:exec-summary", "depends_on", "heinzel:weekly-report")]
    assert needs["declared"] and needs["via"] == "weekly-report" and needs["team_turns"] == 0
    assert (f"heinzel:{hidden}", "writes", "asset:doc:private/plans q4.md") in edges

    text = hz_ok(theo, "graph").stdout
    assert "weekly-report  (team: runs on another home)\n" in text
    wrote_line = (
        "writes doc:reports/weekly.md#this-week (not readable here)  observed in 2 drafts on hz/"
    )
    assert wrote_line in text

    (tmp_path / "docs" / "reports").mkdir()
    (tmp_path / "docs" / "reports" / "weekly.md").write_text("# Weekly\n")
    again = json.loads(hz_ok(theo, "graph", "--json").stdout)
    readable = {n["id"]: n["readable"] for n in again["nodes"]}
    assert readable["asset:doc:reports/weekly.md#this-week"] is True


def test_hostile_receipts_on_hz_state_are_left_out_with_a_coded_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 18 pass: a receipt another home wrote is held to the outbox's lint and must name a
    document inside the documents; one that is not is skipped, named in ``hz team log``."""
    team = make_team_repo(tmp_path)
    mallory = StateBranch(tmp_path / "mallory", str(team))
    weekly = team_id("weekly-report")
    hostile = {
        "01JDTURN11": "doc:notes%0Aforged-heinzel%0A%20%20writes%20doc:fake.md#x",
        "01JDTURN12": "doc:../../../../etc/passwd",
        "01JDTURN13": "",
        "01JDTURN14": "source:git:/repo",
        "01JDTURN15": "doc:evil%E2%80%AEdm.txt",
        "01JDTURN16": "doc:two words.md",
    }
    fine = placed("01JDTURN10", heinzel=weekly, asset="doc:reports/weekly.md#this-week")
    for receipt in [fine, *(placed(t, heinzel=weekly, asset=a) for t, a in hostile.items())]:
        path = mallory.outbox / receipt.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(receipt.to_bytes())
    with monkeypatch.context() as hostile_hz:
        hostile_hz.setattr("hz_kernel.team.state_branch.lint", lambda document, place: None)
        assert mallory.push_pending(now=T0).refused == []
    theo = theo_home(tmp_path, team, reader=False)

    listed = subprocess.run(
        [sys.executable, "-m", "hz_kernel.cli", "team", "log", "--json"],
        capture_output=True,
        text=True,
        env=hz_env(theo),
        timeout=60,
    )
    log = json.loads(listed.stdout)
    assert [r["receipt"]["turn"] for r in log["receipts"]] == ["01JDTURN10"]
    codes = sorted(line.split(":")[0] for line in log["errors"])
    assert codes == ["HZS103", *["HZS122"] * 5]
    assert all(line.split(": ")[1:3] == [str(team), line.split(": ")[2]] for line in log["errors"])
    assert all("/01JDTURN1" in line.split(": ")[2] for line in log["errors"])

    graph = json.loads(hz_ok(theo, "graph", "--json").stdout)
    assets = sorted(n["id"] for n in graph["nodes"] if n["kind"] == "asset")
    assert assets == ["asset:doc:reports/weekly.md#this-week"]
    text = hz_ok(theo, "graph").stdout
    assert "forged" not in text and "passwd" not in text and "\u202e" not in text


def test_a_document_outside_the_documents_root_is_not_readable_here(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "secret.md").write_text("# mine\n")
    (tmp_path / "docs" / "notes.md").write_text("# notes\n")
    settings = SimpleNamespace(documents=DocumentsSettings(root=str(tmp_path / "docs")))
    commands = SimpleNamespace(home=SimpleNamespace(settings=settings))
    assert GraphCommands._readable(commands, "doc:notes.md#x")  # type: ignore[arg-type]
    assert not GraphCommands._readable(commands, "doc:../secret.md")  # type: ignore[arg-type]
    assert not GraphCommands._readable(commands, "doc:reports/../../secret.md")  # type: ignore[arg-type]
