"""A wake by hand is not a schedule slot: it never makes a slot before the approval due.

A wake's key is ``<heinzel>@<request id>`` and the CLI's request ids are
ULIDs, which start with a digit, like a slot's key. Taken for a slot, such a
key sorted before every real slot, so the next tick owed the heinzel the
newest slot at or before now, even one that fired before the contract was
approved: a schedule turn that nothing scheduled.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.homes import World, digest_contract, make_world

APPROVED = "2026-11-30T10:00:00Z"  # one hour after the digest's 09:00 slot
LATER = "2026-11-30T10:30:00Z"  # still before the next slot


def test_issue13_a_hand_wake_does_not_make_the_slot_before_the_approval_due(
    tmp_path: Path,
) -> None:
    world: World = make_world(tmp_path)
    contract = tmp_path / "notes-digest.prose.md"
    contract.write_text(digest_contract())
    world.hz("heinzel", "new", str(contract), HZ_NOW=APPROVED)
    world.hz("approve", "notes-digest", HZ_NOW=APPROVED)
    world.hz("heinzel", "wake", "notes-digest", HZ_NOW=APPROVED)

    ticked = json.loads(world.hz("tick", "--once", "--json", HZ_NOW=LATER).stdout)

    assert ticked["due"] == 0 and ticked["skipped"] == [] and ticked["woken"] == [], ticked
