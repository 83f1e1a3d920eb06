"""Contract texts shared by the contract tests."""

WEEKLY = """\
---
name: weekly-report
description: This week's section of the Checkout weekly report.
hz:
  schedule: "0 15 * * FRI"
  render_on_schedule: if-moved
  inputs:
    merged_prs:
      source: git
      method: merged_pull_requests
      args:
        repo: /srv/checkout
        window: 7d
      recheck: 1h
    notes:
      source: files
      method: glob
      args:
        pattern: "**/*.md"
        root: notes
  requires: [git:read, files:read, documents:write]
  publishes:
    - capability: documents.place_draft
      asset: "doc:reports/weekly.md#checkout"
  outputs:
    section:
      valid_for: 7d
  approvers: [owner]
  agent:
    model: local
    max_usd: 0.5
---
# Weekly report

### Goal

Draft this week's Checkout section from the merged pull requests and the notes.

### Maintains

- A summary, then what was merged, then risks.

### Done when

Every merged pull request appears once.
"""


def with_hz(hz_yaml: str, *, body: str = "### Goal\n\nKeep it true.\n") -> str:
    """A minimal contract around an ``hz:`` table given as indented YAML lines."""
    return f"---\nname: sample\nhz:\n{hz_yaml}---\n{body}"
