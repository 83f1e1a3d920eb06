"""issue 15 item 3: the local model keeps the contract's outline and applies the user's lessons.

A changelog heinzel from the shipped template, on a real git repository, run
through the ``hz`` binary: the draft has exactly the headings the contract's
``Maintains`` names, a docs-only line the user deletes before approving stays
out of the next draft (until the lesson is dismissed), and lines the user
rewords set the wording of the next draft. Every assertion reads the document.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.homes import World, git

CHANGELOG = "# Changelog\n\n## Unreleased\n\n## 1.0.0\n\n- First release.\n"
DAY_ONE = "2026-11-02T09:00:00Z"


class Changelog:
    """A home with a heinzel from the changelog template over a real repository, and its
    document (``name`` and ``document`` as the template's parameters)."""

    def __init__(self, root: Path, name: str = "changelog", document: str = "CHANGELOG.md") -> None:
        self.world = World(root)
        self.world.home.mkdir()
        (self.world.home / "hz.toml").write_text(f'[documents]\nroot = "{root}"\n')
        self.repo = root / "shop"
        self.repo.mkdir()
        self.name = name
        self.document = root / document
        self.document.write_text(CHANGELOG)
        git(self.repo, "init", "-q", "-b", "main")
        self.count = 0

    def commit(self, *subjects: str, when: str = "2026-11-01T10:00:00+00:00") -> None:
        for subject in subjects:
            self.count += 1
            (self.repo / f"change{self.count}.txt").write_text(subject + "\n")
            git(self.repo, "add", ".")
            git(self.repo, "commit", "-q", "-m", subject, when=when)

    def hz(self, now: str, *args: str) -> str:
        return self.world.hz(*args, HZ_NOW=now).stdout

    def create(self) -> None:
        self.hz(DAY_ONE, "heinzel", "new", "--template", "changelog",
                "--param", f"name={self.name}", "--param", f"document={self.document.name}",
                "--param", f"repo={self.repo}", "--param", "model=local")  # fmt: skip
        self.hz(DAY_ONE, "approve", self.name)

    def draft(self) -> str:
        """The lines of the pending draft, between its markers, without the DRAFT tag."""
        text = self.document.read_text()
        found = re.search(r"<!-- hz:begin [^\n]*\n(.*?)<!-- hz:end ", text, re.S)
        assert found, text
        return "\n".join(
            line for line in found[1].splitlines() if f"DRAFT ({self.name}" not in line
        )

    def approve_edited(self, now: str, edit: dict[str, str | None]) -> None:
        """The user edits the draft's lines (None deletes one), deletes the tag, approves."""
        kept: list[str] = []
        for line in self.document.read_text().splitlines():
            if f"DRAFT ({self.name}" in line:
                continue
            replaced = edit.get(line, line)
            if replaced is not None:
                kept.append(replaced)
        self.document.write_text("\n".join(kept) + "\n")
        self.hz(now, "approve", self.name)

    def lessons(self, now: str) -> list[tuple[str, str]]:
        out = self.hz(now, "heinzel", "lessons", self.name)
        return [tuple(line.split("  ", 1)) for line in out.splitlines() if line.startswith("L-")]  # type: ignore[misc]


@pytest.fixture
def changelog(tmp_path: Path) -> Changelog:
    log = Changelog(tmp_path)
    log.commit("feat: add login", "docs: explain the setup", "fix: crash on an empty cart")
    log.create()
    return log


def headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#")]


def test_the_draft_keeps_the_outline_the_contract_names(changelog: Changelog) -> None:
    """issue 15 item 3: the draft's headings are the ones the changelog template's Maintains
    names (Added, Changed, Fixed, Removed; the empty one left out), one level below the kept
    section, so the document's outline is the same as before with those inside Unreleased."""
    changelog.hz(DAY_ONE, "heinzel", "wake", "changelog")
    assert headings(changelog.document.read_text()) == [
        "# Changelog",
        "## Unreleased",
        "### Added",
        "### Changed",
        "### Fixed",
        "## 1.0.0",
    ]
    draft = changelog.draft()
    assert "- feat: add login" in draft.splitlines()
    assert draft.index("### Added") < draft.index("feat: add login") < draft.index("### Changed")
    assert draft.index("### Changed") < draft.index("docs: explain") < draft.index("### Fixed")
    assert draft.index("### Fixed") < draft.index("fix: crash on an empty cart")


def test_deleting_a_docs_line_teaches_the_next_draft_to_leave_such_lines_out(
    changelog: Changelog,
) -> None:
    """issue 15 item 3: after the user deletes the docs-only commit's line and approves, the
    next draft leaves out every docs-only line, a new one included, and keeps the rest."""
    changelog.hz(DAY_ONE, "heinzel", "wake", "changelog")
    changelog.approve_edited("2026-11-02T10:00:00Z", {"- docs: explain the setup": None})
    assert [text for _, text in changelog.lessons("2026-11-02T10:01:00Z")] == [
        "Leave out docs items from the changed section."
    ]
    changelog.commit("docs: fix a typo in the readme", "feat: export orders to csv",
                     when="2026-11-03T08:00:00+00:00")  # fmt: skip
    changelog.hz("2026-11-03T09:00:00Z", "heinzel", "wake", "changelog")
    draft = changelog.draft()
    assert "docs:" not in draft, draft
    assert "- feat: export orders to csv" in draft.splitlines()
    assert "- fix: crash on an empty cart" in draft.splitlines()
    assert headings(draft) == ["### Added", "### Fixed"]


def test_a_dismissed_lesson_no_longer_applies(changelog: Changelog) -> None:
    """issue 15 item 3: once the user dismisses the lesson, docs-only lines come back."""
    changelog.hz(DAY_ONE, "heinzel", "wake", "changelog")
    changelog.approve_edited("2026-11-02T10:00:00Z", {"- docs: explain the setup": None})
    [(lesson_id, _)] = changelog.lessons("2026-11-02T10:01:00Z")
    changelog.hz("2026-11-02T11:00:00Z", "heinzel", "dismiss", "changelog", lesson_id)
    changelog.commit("docs: fix a typo in the readme", when="2026-11-03T08:00:00+00:00")
    changelog.hz("2026-11-03T09:00:00Z", "heinzel", "wake", "changelog")
    draft = changelog.draft()
    assert "- docs: fix a typo in the readme" in draft.splitlines(), draft
    assert "- docs: explain the setup" in draft.splitlines()


def test_a_rewording_lesson_sets_the_wording_of_the_next_draft(changelog: Changelog) -> None:
    """issue 15 item 3: the user rewrites the lines without the commit-kind prefix, with a
    past-tense verb, a capital and a full stop; the next draft writes new lines that way."""
    changelog.hz(DAY_ONE, "heinzel", "wake", "changelog")
    changelog.approve_edited(
        "2026-11-02T10:00:00Z",
        {
            "- feat: add login": "- Added login.",
            "- docs: explain the setup": "- Explained the setup.",
            "- fix: crash on an empty cart": "- Fixed a crash on an empty cart.",
        },
    )
    learned = {text for _, text in changelog.lessons("2026-11-02T10:01:00Z")}
    assert learned == {
        "Leave the commit-kind prefix off each line.",
        "Put the verb that opens a line in the past tense.",
        "Start each line with a capital letter.",
        "End each line with a full stop.",
    }
    changelog.commit("feat: export orders to csv", "fix: apply the discount once",
                     when="2026-11-03T08:00:00+00:00")  # fmt: skip
    changelog.hz("2026-11-03T09:00:00Z", "heinzel", "wake", "changelog")
    lines = changelog.draft().splitlines()
    assert "- Exported orders to csv." in lines
    assert "- Applied the discount once." in lines
    assert "- Added login." in lines
    assert not any(re.match(r"- (feat|fix|docs):", line) for line in lines)


def test_a_wake_the_user_asks_for_reads_commits_made_since_the_last_fetch(
    changelog: Changelog,
) -> None:
    """Issue 15 pass: a wake minutes after a fetch drafted from the cached history (the
    template's ``recheck: 15m``), missing the commits just made."""
    changelog.hz(DAY_ONE, "heinzel", "wake", "changelog")
    changelog.commit("feat: export orders to csv", when="2026-11-02T09:00:30+00:00")
    changelog.hz("2026-11-02T09:01:00Z", "heinzel", "wake", "changelog")
    assert "- feat: export orders to csv" in changelog.draft().splitlines()
