"""Placing drafts in real Markdown files and reading back what the user did with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hz_kernel.adapters.documents import DraftStatus, MarkdownDocuments
from hz_kernel.adapters.documents.layout import _scanned
from hz_kernel.errors import HzError

HEINZEL = "hz-01JBX7Q4ZP8M3V9K2D5T6W1RNE"
OTHER = "hz-01JBX7Q4ZP8M3V9K2D5T6W1RNF"
KEY_1 = f"{HEINZEL}@v1@2026-10-30T15:00@doc:reports/weekly.md#checkout"
KEY_2 = f"{HEINZEL}@v1@2026-11-06T15:00@doc:reports/weekly.md#checkout"
DRAFT = "- Shipped one-click refunds\n- Payment retries behind a flag"

REPORT = (
    "# Weekly report\n\nIntro by Priya.\n\n"
    "## Checkout\n\nLast week's notes.\n\n"
    "## Payments\n\nAll calm.\n"
)


@pytest.fixture
def docs() -> MarkdownDocuments:
    return MarkdownDocuments()


def place(
    docs: MarkdownDocuments,
    path: Path,
    key: str = KEY_1,
    anchor: str | None = "checkout",
    text: str = DRAFT,
    heinzel: str = HEINZEL,
    version: int = 1,
):
    return docs.place_draft(
        path,
        anchor,
        key=key,
        heinzel_name="weekly-report",
        heinzel_id=heinzel,
        contract_version=version,
        text=text,
    )


def section_lines(key: str, text: str = DRAFT, anchor: str = "checkout", version: int = 1) -> str:
    return (
        f"<!-- hz:begin key={key} heinzel={HEINZEL} anchor={anchor} -->\n"
        f"> 🧝 DRAFT (weekly-report v{version}) — edit, then delete this line to approve"
        f" · hz:{HEINZEL}\n"
        "\n"
        f"{text}\n"
        f"<!-- hz:end key={key} -->\n"
    )


def test_placing_into_a_new_file_creates_it_with_the_visible_tag(docs, tmp_path):
    path = tmp_path / "weekly.md"
    placed = place(docs, path, anchor=None)

    assert not placed.already_there
    assert placed.superseded == [] and placed.replaced == []
    text = path.read_text(encoding="utf-8")
    assert "> 🧝 DRAFT (weekly-report v1) — edit, then delete this line to approve" in text
    assert f"hz:{HEINZEL}" in text
    assert text.endswith(f"<!-- hz:end key={KEY_1} -->\n")
    assert placed.section.text == DRAFT
    assert placed.section.pending
    assert placed.section.first_line == 1
    assert placed.section.last_line == len(text.splitlines())


def test_placing_twice_with_one_key_writes_once(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    first = place(docs, path)
    before = path.read_bytes()
    inode = path.stat().st_ino

    again = place(docs, path, text="a different text the model produced on resume")

    assert again.already_there
    assert again.section == first.section
    assert path.read_bytes() == before
    assert path.stat().st_ino == inode


def test_anchor_puts_the_section_right_under_its_heading(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)

    place(docs, path)

    expected = REPORT.replace(
        "## Checkout\n\nLast week's notes.",
        "## Checkout\n\n" + section_lines(KEY_1) + "\nLast week's notes.",
    )
    assert path.read_text() == expected


def test_anchor_matches_a_heading_slug_with_punctuation_and_closing_hashes(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text("# Report\n### Check-out: Q3 risks! ###\nbody\n")

    place(docs, path, anchor="check-out-q3-risks")

    lines = path.read_text().splitlines()
    assert lines[1] == "### Check-out: Q3 risks! ###"
    assert lines[2] == ""
    assert lines[3].startswith("<!-- hz:begin")
    assert lines[-2:] == ["", "body"]


def test_a_missing_anchor_heading_is_appended(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text("# Weekly report\n\nIntro.\n")

    place(docs, path, anchor="q3-risks")

    text = path.read_text()
    assert text.startswith("# Weekly report\n\nIntro.\n\n## Q3 risks\n\n<!-- hz:begin")
    assert place(docs, path, key=KEY_2, anchor="q3-risks").superseded == [KEY_1]
    assert path.read_text().count("## Q3 risks") == 1


def test_headings_in_fenced_code_and_inside_sections_are_not_anchors(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text("# Doc\n\n```md\n## Checkout\n```\n\n## Checkout\n\nreal\n")

    place(docs, path, text="## Checkout\ninside the draft")
    place(docs, path, key=KEY_2, heinzel=OTHER, text="second heinzel")

    lines = path.read_text().splitlines()
    assert lines[3] == "## Checkout" and lines[4] == "```"
    assert lines[6] == "## Checkout"
    assert [section.heinzel_id for section in docs.pending_sections(path)] == [OTHER, HEINZEL]


def test_a_newer_draft_replaces_the_pending_one_in_place(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    place(docs, path)
    place(docs, path, key=f"{OTHER}@v3@x@doc:reports/weekly.md", heinzel=OTHER, anchor=None)

    newer = place(docs, path, key=KEY_2, text="- Refunds are live", version=2)

    assert newer.superseded == [KEY_1]
    assert docs.find(path, KEY_1) is None
    pending = docs.pending_sections(path)
    assert [(section.heinzel_id, section.key) for section in pending] == [
        (HEINZEL, KEY_2),
        (OTHER, f"{OTHER}@v3@x@doc:reports/weekly.md"),
    ]
    assert path.read_text().startswith(
        REPORT[: REPORT.index("Last")].replace(
            "## Checkout\n\n",
            "## Checkout\n\n" + section_lines(KEY_2, "- Refunds are live", version=2),
        )
    )


def test_a_newer_draft_takes_over_the_approved_section_under_the_anchor(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    place(docs, path)
    docs.approve_draft(path, KEY_1)

    newer = place(docs, path, key=KEY_2, text="- This week")

    assert newer.superseded == [] and newer.replaced == [KEY_1]
    assert docs.find(path, KEY_1) is None
    assert path.read_text().count("<!-- hz:begin") == 1


def test_without_anchor_approved_sections_stay_and_the_new_one_is_appended(docs, tmp_path):
    path = tmp_path / "changelog.md"
    path.write_text("# Changelog\n")
    place(docs, path, anchor=None, text="- v1.0")
    docs.approve_draft(path, KEY_1)

    newer = place(docs, path, key=KEY_2, anchor=None, text="- v1.1")

    assert newer.superseded == [] and newer.replaced == []
    assert docs.find(path, KEY_1).text == "- v1.0"
    assert newer.section.first_line > docs.find(path, KEY_1).last_line


def test_keys_are_matched_exactly_whatever_they_contain(docs, tmp_path):
    path = tmp_path / "weekly.md"
    odd = f"{HEINZEL}@v1@2026-10-30T15:00@doc:my reports/week 44.md#q&a --> 100%"
    place(docs, path, key=odd, anchor=None)

    assert docs.find(path, odd).key == odd
    assert docs.find(path, odd[:-1]) is None
    assert docs.find(path, odd + "x") is None
    assert "-->" not in path.read_text().splitlines()[0][:-3]


def test_draft_state_placed_and_edited(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    place(docs, path)

    assert docs.draft_state(path, KEY_1, placed_text=DRAFT).status is DraftStatus.PLACED
    path.write_text(path.read_text().replace("one-click refunds", "one-click refunds   "))
    assert docs.draft_state(path, KEY_1, placed_text=DRAFT).status is DraftStatus.PLACED

    path.write_text(path.read_text().replace("behind a flag", "for 10% of users"))
    state = docs.draft_state(path, KEY_1, placed_text=DRAFT)
    assert state.status is DraftStatus.EDITED
    assert state.text.endswith("for 10% of users")


def test_a_turn_parses_each_version_of_its_document_once(docs, tmp_path):
    """A turn looks at the document, places its draft over it (which reads the document and
    the placed result) and the next turn looks again: two versions, two scans, not four;
    a user's save is a new version and is scanned."""
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    _scanned.cache_clear()

    assert docs.draft_state(path, KEY_1, placed_text=DRAFT).status is DraftStatus.REJECTED
    place(docs, path)
    assert docs.draft_state(path, KEY_1, placed_text=DRAFT).status is DraftStatus.PLACED
    assert _scanned.cache_info().misses == 2

    path.write_text(path.read_text().replace("behind a flag", "for 10% of users"))
    assert docs.draft_state(path, KEY_1, placed_text=DRAFT).status is DraftStatus.EDITED
    assert _scanned.cache_info().misses == 3


def test_draft_state_approved_when_the_user_deletes_the_tag_line(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    place(docs, path)
    kept = [line for line in path.read_text().splitlines(True) if "🧝 DRAFT" not in line]
    path.write_text("".join(kept).replace("Payment retries", "Risk first: payment retries"))

    state = docs.draft_state(path, KEY_1, placed_text=DRAFT)

    assert state.status is DraftStatus.APPROVED
    assert state.text == "- Shipped one-click refunds\n- Risk first: payment retries behind a flag"
    assert docs.pending_sections(path) == []


def test_draft_state_rejected_and_missing(docs, tmp_path):
    path = tmp_path / "weekly.md"
    assert docs.draft_state(path, KEY_1, placed_text=DRAFT).status is DraftStatus.MISSING

    path.write_text(REPORT)
    place(docs, path)
    lines = path.read_text().splitlines(True)
    only_markers = [line for line in lines if line.startswith("<!--") or line in REPORT]
    path.write_text("".join(only_markers))
    assert docs.draft_state(path, KEY_1, placed_text=DRAFT).status is DraftStatus.REJECTED

    path.write_text(REPORT)
    assert docs.draft_state(path, KEY_1, placed_text=DRAFT).status is DraftStatus.REJECTED


def test_approve_draft_removes_only_the_tag_line_and_is_idempotent(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    place(docs, path)

    first = docs.approve_draft(path, KEY_1)
    after_first = path.read_bytes()
    second = docs.approve_draft(path, KEY_1)

    assert first.changed and first.status is DraftStatus.APPROVED and first.text == DRAFT
    assert not second.changed and second.status is DraftStatus.APPROVED
    assert path.read_bytes() == after_first
    assert "DRAFT" not in path.read_text()
    assert docs.find(path, KEY_1).pending is False


def test_remove_draft_restores_the_document_and_is_idempotent(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    place(docs, path)

    first = docs.remove_draft(path, KEY_1)
    second = docs.remove_draft(path, KEY_1)

    assert first.changed and first.status is DraftStatus.REJECTED
    assert not second.changed and second.status is DraftStatus.REJECTED
    assert path.read_text() == REPORT
    assert not docs.remove_draft(tmp_path / "gone.md", KEY_1).changed


def test_remove_draft_at_the_end_keeps_a_missing_final_newline(docs, tmp_path):
    path = tmp_path / "notes.md"
    path.write_bytes(b"# Notes\nno newline at the end")

    place(docs, path, anchor=None)
    assert not path.read_bytes().endswith(b"\n")
    docs.remove_draft(path, KEY_1)

    assert path.read_bytes() == b"# Notes\nno newline at the end"


def test_approving_an_unknown_key_is_an_error(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    with pytest.raises(HzError) as caught:
        docs.approve_draft(path, KEY_1)
    assert caught.value.code == "HZE049"
    assert caught.value.place == str(path)


def test_markers_shown_inside_a_code_fence_are_only_an_example(docs, tmp_path):
    path = tmp_path / "guide.md"
    example = "~~~markdown\n" + section_lines(KEY_1) + "~~~\n"
    path.write_text("# Guide\n\n" + example)

    assert docs.find(path, KEY_1) is None
    assert docs.pending_sections(path) == []
    assert not place(docs, path, anchor=None).already_there
    assert path.read_text().startswith("# Guide\n\n" + example + "\n<!-- hz:begin")


def test_pending_drafts_for_another_anchor_are_a_different_asset(docs, tmp_path):
    path = tmp_path / "weekly.md"
    path.write_text(REPORT)
    place(docs, path)

    other_asset = place(docs, path, key=KEY_2, anchor="payments")

    assert other_asset.superseded == []
    assert [section.anchor for section in docs.pending_sections(path)] == ["checkout", "payments"]
