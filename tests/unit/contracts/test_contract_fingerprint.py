"""The intent fingerprint: blind to layout, comments and order; moved by any material change."""

from __future__ import annotations

import pytest
from contract_samples import WEEKLY

from hz_kernel.contracts import compile_contract


def fingerprint(text: str) -> str:
    return compile_contract(text, source="fp").fingerprint


BASE = fingerprint(WEEKLY)

SAME_MEANING = {
    "trailing spaces and blank lines": WEEKLY.replace("### Goal\n", "### Goal   \n\n\n"),
    "body reflowed": WEEKLY.replace("Checkout section from", "Checkout section\n   from"),
    "html comments": WEEKLY.replace("### Maintains", "<!-- reviewed by Priya -->\n### Maintains")
    + "\n<!-- a\nlong\ncomment -->\n",
    "crlf line endings": WEEKLY.replace("\n", "\r\n"),
    "yaml comments": WEEKLY.replace("  inputs:\n", "  inputs:  # what we read\n"),
    "key order": WEEKLY.replace(
        "  approvers: [owner]\n  agent:\n    model: local\n    max_usd: 0.5\n",
        "  agent: {max_usd: 0.5, model: local}\n  approvers: [owner]\n",
    ),
    "flow vs block yaml": WEEKLY.replace(
        '      args:\n        pattern: "**/*.md"\n        root: notes\n',
        "      args: {root: notes, pattern: '**/*.md'}\n",
    ),
    "requires order": WEEKLY.replace(
        "[git:read, files:read, documents:write]", "[documents:write, git:read, files:read]"
    ),
    "cron spacing and case": WEEKLY.replace('"0 15 * * FRI"', '"0  15 * *   fri"'),
    "cron weekday as a number (issue 12 item 7)": WEEKLY.replace('"0 15 * * FRI"', '"0 15 * * 5"'),
    "cron list for a range": WEEKLY.replace('"0 15 * * FRI"', '"0 15 * JAN-DEC 5-5"'),
    "duration spelling": WEEKLY.replace("recheck: 1h", "recheck: 60m"),
    "explicit defaults": WEEKLY.replace("  approvers: [owner]\n", ""),
    "section order": WEEKLY.replace(
        "### Maintains\n\n- A summary, then what was merged, then risks.\n\n"
        "### Done when\n\nEvery merged pull request appears once.\n",
        "### Done when\n\nEvery merged pull request appears once.\n\n"
        "### Maintains\n\n- A summary, then what was merged, then risks.\n",
    ),
    "empty section added": WEEKLY + "\n### Continuity\n\n",
    "heading case": WEEKLY.replace("### Done when", "### DONE WHEN"),
    "description": WEEKLY.replace("This week's section", "The section"),
    "asset path tidied": WEEKLY.replace("doc:reports/weekly.md", "doc:./reports//weekly.md"),
    "no discover hints": WEEKLY.replace(
        "  approvers: [owner]\n", "  approvers: [owner]\n  discover: []\n"
    ),
}


@pytest.mark.parametrize("label", sorted(SAME_MEANING))
def test_layout_comments_and_order_keep_the_fingerprint(label: str) -> None:
    assert fingerprint(SAME_MEANING[label]) == BASE


def test_approvers_are_a_set_of_handles() -> None:
    one = fingerprint(WEEKLY.replace("[owner]", "[owner, priya]"))
    assert fingerprint(WEEKLY.replace("[owner]", "['@priya', owner, priya]")) == one


MATERIAL = {
    "schedule": ('"0 15 * * FRI"', '"0 16 * * FRI"'),
    "schedule on one more day": ('"0 15 * * FRI"', '"0 15 * * FRI,SAT"'),
    "schedule's daylight-saving behaviour": ('"0 15 * * FRI"', '"*/60 15 * * FRI"'),
    "model left to the home's default": ("    model: local\n", ""),
    "schedule removed": ('  schedule: "0 15 * * FRI"\n', ""),
    "render mode": ("render_on_schedule: if-moved", "render_on_schedule: always"),
    "input arg": ("repo: /srv/checkout", "repo: /srv/payments"),
    "input window": ("window: 7d", "window: 14d"),
    "recheck": ("recheck: 1h", "recheck: 2h"),
    "input removed": (
        "    notes:\n      source: files\n      method: glob\n      args:\n"
        '        pattern: "**/*.md"\n        root: notes\n',
        "",
    ),
    "input renamed": ("    notes:", "    notebook:"),
    "capability": ("files:read, documents:write", "files:read, documents:write, http:read"),
    "asset": ("#checkout", "#payments"),
    "valid_for": ("valid_for: 7d", "valid_for: 8d"),
    "approvers": ("[owner]", "[owner, priya]"),
    "a discover hint": (
        "  approvers: [owner]\n",
        '  approvers: [owner]\n  discover: ["~/n/*.md"]\n',
    ),
    "model": ("model: local", "model: 'openai:gpt-4o'"),
    "max_usd": ("max_usd: 0.5", "max_usd: 0.6"),
    "goal word": ("from the merged", "from all merged"),
    "done when": ("appears once", "appears twice"),
    "preamble": ("# Weekly report", "# Weekly report, Checkout"),
    "section added": (
        "### Done when",
        "### Continuity\n\nKeep last week's order.\n\n### Done when",
    ),
}


@pytest.mark.parametrize("label", sorted(MATERIAL))
def test_a_material_change_moves_the_fingerprint(label: str) -> None:
    old, new = MATERIAL[label]
    assert WEEKLY.count(old) == 1
    assert fingerprint(WEEKLY.replace(old, new)) != BASE


def test_name_and_namespace_are_identity_not_intent() -> None:
    renamed = WEEKLY.replace("name: weekly-report", "name: checkout-weekly\nnamespace: team")
    assert fingerprint(renamed) == BASE


def test_a_contract_without_discover_keeps_the_fingerprint_it_had_before_the_key() -> None:
    assert BASE == "ea4e873d682cd17f47c5f77e9ba4bf29ce6f5de28f4180eb5f94e9d38d2e67c6"


def test_the_fingerprint_is_stable_across_runs() -> None:
    assert fingerprint(WEEKLY) == BASE
    assert compile_contract(WEEKLY, source="a") == compile_contract(WEEKLY, source="b")
