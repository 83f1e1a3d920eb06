"""Review through the real ``hz`` binary: approve and reject by name, and what a rejection teaches.

Issue 12, item 3: a rejection records itself (and the user's reason, which may
become a lesson), never lessons derived from the deleted text; no lesson quotes
the document. Item 4: ``hz approve NAME`` / ``hz reject NAME`` decide that
heinzel's one waiting item; with several waiting, the error lists a ref for each.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.homes import World, digest_contract, make_world

NOW = "2026-12-01T09:00:00Z"
TAG_LINE = re.compile(r"> 🧝 DRAFT.*\n")
DRAFT_LINES = ("- fixed the login bug", "- shipped search", "- reviewed the checkout flow")


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A heinzel with its contract approved and one draft waiting in ``reports/digest.md``."""
    world = make_world(tmp_path)
    contract = tmp_path / "digest.prose.md"
    contract.write_text(digest_contract())
    world.hz("heinzel", "new", str(contract), HZ_NOW=NOW)
    world.hz("approve", "notes-digest", HZ_NOW=NOW)
    world.hz("heinzel", "wake", "notes-digest", HZ_NOW=NOW)
    assert all(line in document(world) for line in DRAFT_LINES)
    return world


def document(world: World) -> str:
    return (world.reports / "digest.md").read_text()


def draft_keys(world: World) -> list[str]:
    listed = json.loads(world.hz("drafts", "--json", HZ_NOW=NOW).stdout)
    return [d["key"] for d in listed["items"]]


def heinzel_id(world: World) -> str:
    return json.loads(world.hz("heinzel", "show", "notes-digest", "--json").stdout)["heinzel"]["id"]


def lessons(world: World) -> list[str]:
    listed = json.loads(world.hz("heinzel", "lessons", "notes-digest", "--json").stdout)
    return [str(item["lesson"]) for item in listed]


def amend_narrower(world: World) -> None:
    """A user's amendment that lowers the cap, so an amendment waits beside the draft."""
    v1 = world.home / "heinzel" / heinzel_id(world) / "contract" / "v1.prose.md"
    narrower = world.root / "v2.prose.md"
    narrower.write_text(v1.read_text().replace("max_usd: 0.2", "max_usd: 0.1"))
    world.hz("heinzel", "amend", "notes-digest", str(narrower), HZ_NOW=NOW)


# -- item 3: rejecting teaches nothing harmful ----------------------------------------------


def test_issue12_item3_a_rejection_is_recorded_and_teaches_nothing(world: World) -> None:
    (key,) = draft_keys(world)
    world.hz("reject", key, HZ_NOW=NOW)
    assert "hz:begin" not in document(world)
    kinds = world.kinds(heinzel_id(world))
    assert "draft.rejected" in kinds
    assert "lesson.recorded" not in kinds
    assert lessons(world) == []


@pytest.mark.parametrize("deleted", ["the section", "the tag line and all the text"])
def test_issue12_item3_a_draft_deleted_in_the_document_teaches_nothing(
    world: World, deleted: str
) -> None:
    """Both ways ``docs/documents.md`` names for rejecting in the file."""
    text = document(world)
    if deleted == "the section":
        begin = text.index("<!-- hz:begin")
        end = text.index("-->", text.index("<!-- hz:end")) + len("-->")
    else:
        begin = text.index("-->", text.index("<!-- hz:begin")) + len("-->\n")
        end = text.index("<!-- hz:end")
    (world.reports / "digest.md").write_text(text[:begin] + text[end:])
    world.hz("tick", "--once", HZ_NOW="2026-12-01T09:05:00Z")
    assert "draft.rejected" in world.kinds(heinzel_id(world))
    assert lessons(world) == []
    assert draft_keys(world) == []


def test_issue12_item3_the_reason_may_become_a_lesson_the_text_never(world: World) -> None:
    reason = "Too long: keep it under five lines"
    world.hz("reject", "notes-digest", "--reason", reason, HZ_NOW=NOW)
    assert lessons(world) == ["Keep drafts to at most 4 lines."]
    spine = (world.home / "heinzel" / heinzel_id(world) / "session.jsonl").read_text()
    assert reason not in spine and "shipped search" not in spine
    other = world.hz("reject", "notes-digest", "--reason", "x", check=False, HZ_NOW=NOW)
    assert other.returncode == 2 and other.stderr.startswith("HZU034: notes-digest: ")


def test_issue12_item3_lessons_from_edits_name_the_pattern_never_the_line(world: World) -> None:
    edited = TAG_LINE.sub("", document(world)).replace("- reviewed the checkout flow\n", "")
    (world.reports / "digest.md").write_text(edited)
    world.hz("tick", "--once", HZ_NOW="2026-12-01T09:05:00Z")
    learned = lessons(world)
    assert learned == ["Keep the notes section to what matters: leave out minor items."]
    for line in DRAFT_LINES:
        assert all(line.removeprefix("- ") not in lesson for lesson in learned)


# -- item 4: approve and reject by name -----------------------------------------------------


def test_issue12_item4_approve_by_name_approves_the_one_waiting_draft(world: World) -> None:
    (key,) = draft_keys(world)
    approved = world.hz("approve", "notes-digest", HZ_NOW=NOW)
    assert approved.stdout.startswith("notes-digest: approved")
    assert "DRAFT (notes-digest" not in document(world)
    spine = world.spine(heinzel_id(world))
    assert any(e["kind"] == "approval.observed" and e["data"]["key"] == key for e in spine)
    assert draft_keys(world) == []


def test_approving_an_approved_draft_again_says_so_and_changes_nothing(world: World) -> None:
    (key,) = draft_keys(world)
    world.hz("approve", key, HZ_NOW=NOW)
    approved = document(world)
    again = world.hz("approve", key, HZ_NOW=NOW)
    assert again.returncode == 0
    assert again.stdout.startswith(f"{key}: already approved, nothing changed; now "), again.stdout
    decided = json.loads(world.hz("approve", key, "--json", HZ_NOW=NOW).stdout)
    assert decided["already"] == "approved"
    assert document(world) == approved


def test_issue12_item4_reject_by_name_rejects_the_one_waiting_draft(world: World) -> None:
    world.hz("reject", "notes-digest", HZ_NOW=NOW)
    assert "hz:begin" not in document(world)
    assert draft_keys(world) == []


def test_a_draft_already_approved_is_never_deleted_by_a_reject_of_its_key(world: World) -> None:
    """Rejecting by the full key of an approved draft would have removed the user's section."""
    (key,) = draft_keys(world)
    world.hz("approve", key, HZ_NOW=NOW)
    approved = document(world)
    refused = world.hz("reject", key, check=False, HZ_NOW=NOW)
    assert refused.returncode == 2
    assert refused.stderr.startswith("HZU038: ") and "not pending" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert document(world) == approved
    assert all(line in approved for line in DRAFT_LINES)


def test_issue12_item4_with_two_waiting_the_error_lists_a_ref_for_each(world: World) -> None:
    (key,) = draft_keys(world)
    amend_narrower(world)
    for verb in ("approve", "reject"):
        refused = world.hz(verb, "notes-digest", check=False, HZ_NOW=NOW)
        assert refused.returncode == 2
        assert refused.stderr.startswith("HZU036: notes-digest: 2 items wait"), refused.stderr
    refs = re.findall(r"notes-digest@\S+?(?=,|$)", refused.stderr.strip())
    draft_ref = f"notes-digest@{key.split('@', 1)[1]}"
    assert refs[0] == draft_ref and refs[1].startswith("notes-digest@amendment:")
    assert "v2" in world.hz("approve", refs[1], HZ_NOW=NOW).stdout
    world.hz("approve", draft_ref, HZ_NOW=NOW)
    assert draft_keys(world) == []
    missing = world.hz("approve", refs[1], check=False, HZ_NOW=NOW)
    assert missing.returncode == 2 and missing.stderr.startswith("HZU033: notes-digest: ")


def test_issue12_item4_reject_by_name_of_a_proposed_first_contract_says_how_to_drop_it(
    tmp_path: Path,
) -> None:
    """A proposed v1 waits (``hz approve`` takes it), so "nothing waits" would be false."""
    world = make_world(tmp_path)
    contract = tmp_path / "digest.prose.md"
    contract.write_text(digest_contract())
    world.hz("heinzel", "new", str(contract), HZ_NOW=NOW)
    refused = world.hz("reject", "notes-digest", "--reason", "wrong folder", check=False)
    assert refused.returncode == 2
    assert refused.stderr.startswith("HZU034: notes-digest: "), refused.stderr
    assert "nothing of this heinzel waits" not in refused.stderr
    assert "hz heinzel retire notes-digest" in refused.stderr
    assert "proposed" in world.hz("heinzel", "list").stdout
    shown = world.hz("heinzel", "contract", "notes-digest").stdout
    assert shown.startswith("notes-digest: its first contract waits for approval\n")
    assert shown.endswith("\napprove with: hz approve notes-digest@contract:v1\n")


def test_the_same_rule_taught_twice_is_one_lesson(world: World) -> None:
    """A lesson the heinzel already holds is not recorded again (found by the new-user pass)."""
    world.hz("reject", "notes-digest", "--reason", "shorter", HZ_NOW=NOW)
    assert lessons(world) == ["Keep drafts shorter."]
    world.hz("heinzel", "wake", "notes-digest", HZ_NOW="2026-12-01T09:10:00Z")
    assert draft_keys(world), "a second draft waits"
    world.hz("reject", "notes-digest", "--reason", "Shorter", HZ_NOW="2026-12-01T09:15:00Z")
    assert lessons(world) == ["Keep drafts shorter."]


def test_hz_heinzel_contract_shows_the_text_and_the_waiting_amendment(world: World) -> None:
    """``hz heinzel contract NAME``, as docs/discovery.md names it (found by the new-user pass)."""
    shown = world.hz("heinzel", "contract", "notes-digest").stdout
    assert shown.startswith("notes-digest v1 (versions: 1)\n") and "max_usd: 0.2" in shown
    assert "waits" not in shown
    v1 = world.home / "heinzel" / heinzel_id(world) / "contract" / "v1.prose.md"
    wider = world.root / "v2.prose.md"
    wider.write_text(v1.read_text().replace("max_usd: 0.2", "max_usd: 0.4"))
    world.hz("heinzel", "amend", "notes-digest", str(wider), HZ_NOW=NOW)
    shown = world.hz("heinzel", "contract", "notes-digest").stdout
    assert "\nwidens: " in shown, shown
    assert "-    max_usd: 0.2\n+    max_usd: 0.4\n" in shown
    assert "+++ proposed.prose.md" in shown
    (ref,) = re.findall(r"hz approve (notes-digest@amendment:\S+)", shown)
    world.hz("approve", ref, HZ_NOW=NOW)
    viewed = json.loads(world.hz("heinzel", "contract", "notes-digest", "--json").stdout)
    assert (viewed["versions"], viewed["version"], viewed["pending"]) == ([1, 2], 2, None)
    diff = world.hz("heinzel", "contract", "notes-digest", "--version", "2", "--against", "1")
    assert "--- v1.prose.md" in diff.stdout and "+++ v2.prose.md" in diff.stdout
    old = world.hz("heinzel", "contract", "notes-digest", "--version", "1").stdout
    assert old.startswith("notes-digest v1 (versions: 1, 2)") and "max_usd: 0.2" in old
    missing = world.hz("heinzel", "contract", "notes-digest", "--version", "9", check=False)
    assert missing.returncode == 1 and missing.stderr.startswith("HZC082: ")


def test_declining_an_amendment_with_a_reason_teaches_no_writing_lesson(world: World) -> None:
    """An amendment is no draft (found by the new-user pass): its reason runs no learning turn
    and is kept on ``amendment.declined`` instead."""
    amend_narrower(world)
    shown = world.hz("heinzel", "contract", "notes-digest").stdout
    (ref,) = re.findall(r"hz reject (notes-digest@amendment:\S+)", shown)
    turns_before = world.kinds(heinzel_id(world)).count("turn.started")
    world.hz("reject", ref, "--reason", "not\x1b relevant\n now", HZ_NOW=NOW)
    assert lessons(world) == []
    spine = world.spine(heinzel_id(world))
    declined = [e["data"] for e in spine if e["kind"] == "amendment.declined"]
    assert [d.get("reason") for d in declined] == ["not relevant now"]
    assert world.kinds(heinzel_id(world)).count("turn.started") == turns_before
