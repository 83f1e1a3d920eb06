"""Wednesday in the ADR's week: a checkout incident file appears under Priya's notes.

The weekly report's contract says ``discover: ["~/notes/**/incident*.md"]``.
On Tuesday evening Priya writes ``~/notes/2026-11/incident-checkout.md``.
Wednesday's first tick (``hz tick --once`` from cron, a real process at a
pinned clock) runs the daily discovery: the heinzel wakes once with cause
``discovered``, and its turn proposes reading the file. ``hz heinzel
show`` lists the proposal; Priya declines it with ``hz reject``; no later
tick, that day or any other, proposes it or wakes for it again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.homes import World, checkout_repo, make_world

CONTRACT = """---
name: weekly-report
hz:
  schedule: "0 15 * * FRI"
  inputs:
    merged_prs:
      source: git
      method: merged_pull_requests
      args: {{repo: "{repo}", window: 7d}}
    notes:
      source: files
      method: glob
      args: {{pattern: "*.md", root: notes}}
  requires: [git:read, files:read, documents:write]
  publishes:
    - {{capability: documents.place_draft, asset: "doc:reports/weekly.md#this-week"}}
  # incidents Priya writes anywhere under her notes
  discover: ["~/notes/**/incident*.md"]
---
### Goal
This week's section of the weekly report: merged PRs and notes.
"""


def _tick(world: World, when: str) -> dict[str, Any]:
    done = world.hz("tick", "--once", "--json", HZ_NOW=when, HOME=str(world.root))
    return dict(json.loads(done.stdout))


def _show(world: World, when: str) -> dict[str, Any]:
    done = world.hz("heinzel", "show", "weekly-report", "--json", HZ_NOW=when)
    return dict(json.loads(done.stdout))


def test_wednesday_a_discovered_incident_file_is_proposed_once_and_declined_for_good(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    repo = checkout_repo(world)
    contract = world.root / "weekly-report.prose.md"
    contract.write_text(CONTRACT.format(repo=repo))
    monday = "2026-11-09T09:00:00Z"
    world.hz("heinzel", "new", str(contract), HZ_NOW=monday)
    world.hz("approve", "weekly-report", HZ_NOW=monday)
    heinzel = _show(world, monday)["heinzel"]["id"]
    first = _tick(world, monday)
    assert all("discovered" not in w["causes"] for w in first["woken"])

    assert _tick(world, "2026-11-10T08:00:00Z")["woken"] == []  # Tuesday's job: nothing new
    # Tuesday evening: a new incident note, two folders down
    incident = world.notes / "2026-11" / "incident-checkout.md"
    incident.parent.mkdir()
    incident.write_text("# Checkout incidents\n- card payments failed for 20 minutes\n")
    assert _tick(world, "2026-11-10T20:00:00Z")["woken"] == []  # the job ran today already

    # Wednesday's first tick: one discovered turn, which proposes reading it
    wednesday = _tick(world, "2026-11-11T07:00:00Z")
    assert [w["causes"] for w in wednesday["woken"]] == [["discovered"]]
    assert wednesday["problems"] == []
    shown = _show(world, "2026-11-11T07:05:00Z")
    pending = [a for a in shown["amendments"] if a["status"] == "pending"]
    assert [a["by"] for a in pending] == ["heinzel"]
    assert str(incident) in pending[0]["reason"]
    assert pending[0]["widens"] == ['inputs: adds "incident-checkout", a discovered source']
    assert shown["heinzel"]["last_report"] == "Proposed reading incident-checkout.md (discovered)."
    printed = world.hz("heinzel", "show", "weekly-report", HZ_NOW="2026-11-11T07:05:00Z").stdout
    assert (
        f"amendment {pending[0]['proposal']} by heinzel "
        '(widens: inputs: adds "incident-checkout", a discovered source)'
    ) in printed

    # Priya declines; no later tick proposes it or wakes for it again
    # (Monday's draft waits beside it, so she names the amendment)
    named = f"weekly-report@amendment:{pending[0]['proposal']}"
    world.hz("reject", named, HZ_NOW="2026-11-11T08:00:00Z")
    for when in ("2026-11-11T12:00:00Z", "2026-11-12T07:00:00Z", "2026-11-16T07:00:00Z"):
        assert all("discovered" not in w["causes"] for w in _tick(world, when)["woken"])
    kinds = world.kinds(heinzel)
    assert kinds.count("source.discovered") == 1
    assert kinds.count("amendment.proposed") == 1
    declined = [e["data"] for e in world.spine(heinzel) if e["kind"] == "amendment.declined"]
    assert declined == [
        {"proposal": pending[0]["proposal"], "sources": ["incident-checkout", str(incident)]}
    ]
    assert _show(world, "2026-11-16T08:00:00Z")["heinzel"]["contract_version"] == 1
