"""Issue 15: release notes over a real repository of 300 commits, on the offline local model.

A heinzel made from the changelog template keeps the Unreleased part of
``RELEASES.md`` for a real git repository (300 commits, written with
``git fast-import``). Run through the ``hz`` command at pinned times, it
reads the history with its tools (``git_log``, then ``git_show`` of the
newest commits: their diffs), drafts, is edited by the user (a docs-only
line deleted) and approved, learns that, and drafts again after new commits
without docs-only lines. Every assertion reads the document or the spine.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from hz_kernel.home import Home
from tests.integration.engine.test_local_model_learns import DAY_ONE, Changelog
from tests.support.homes import git

NAME = "release-notes"
KINDS = ("feat", "fix", "docs", "feat", "chore", "fix", "feat", "docs", "fix", "feat")
START = 1_761_998_400  # 2025-11-01T12:00:00Z: the first commit; one an hour after it


def _history(repo: Path, count: int) -> None:
    """``count`` commits on main, each adding one file, written in one ``git fast-import``."""
    stream: list[str] = []
    for n in range(1, count + 1):
        subject = f"{KINDS[n % len(KINDS)]}: change number {n}"
        when = START + 3600 * n
        content = f"change {n}\n"
        stream += [
            "commit refs/heads/main",
            f"mark :{n}",
            f"author Priya <priya@acme.test> {when} +0000",
            f"committer Priya <priya@acme.test> {when} +0000",
            f"data {len(subject.encode())}",
            subject,
        ]
        if n > 1:
            stream.append(f"from :{n - 1}")
        stream += [f"M 644 inline change{n}.txt", f"data {len(content.encode())}", content]
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=repo,
        input="\n".join(stream).encode(),
        check=True,
        capture_output=True,
    )
    git(repo, "reset", "-q", "--hard", "main")


class Releases(Changelog):
    """The changelog helper under another name and document, with the tools it called."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, name=NAME, document="RELEASES.md")

    def tools_called(self) -> list[str]:
        (heinzel,) = Home.resolve(self.world.home).heinzel_ids()
        return [
            str(e["data"]["tool"])  # type: ignore[index]
            for e in self.world.spine(heinzel)
            if e["kind"] == "tool.started"
        ]


def test_release_notes_over_300_commits_read_with_tools_learn_from_an_edit(
    tmp_path: Path,
) -> None:
    notes = Releases(tmp_path)
    _history(notes.repo, 300)
    assert git(notes.repo, "rev-list", "--count", "HEAD").strip() == "300"
    notes.create()
    notes.hz(DAY_ONE, "heinzel", "wake", NAME)
    first = notes.draft().splitlines()
    called = notes.tools_called()
    assert called[0] == "git_log" and called.count("git_show") >= 1, called
    assert "- feat: change number 300" in first, first[:20]
    docs = [line for line in first if line.startswith("- docs:")]
    assert docs, "docs-only commits are listed before the lesson"

    notes.approve_edited("2026-11-02T10:00:00Z", {docs[0]: None})
    assert docs[0] not in notes.document.read_text().splitlines(), "the line was deleted"
    lessons = notes.hz("2026-11-02T10:01:00Z", "heinzel", "lessons", NAME)
    assert "Leave out docs items" in lessons, lessons

    later = START + 3600 * 400
    for n, subject in enumerate(("docs: a typo in the readme", "feat: export orders"), 1):
        (notes.repo / f"late{n}.txt").write_text(subject + "\n")
        git(notes.repo, "add", ".")
        git(notes.repo, "commit", "-q", "-m", subject, when=f"@{later + n} +0000")
    notes.hz("2026-11-20T09:00:00Z", "heinzel", "wake", NAME)
    second = notes.draft().splitlines()
    assert "- feat: export orders" in second
    assert not [line for line in second if line.startswith("- docs:")], second
    text = notes.document.read_text()
    assert text.count("<!-- hz:begin ") == 1 and text.rstrip().endswith("- First release.")
