"""Issue 12 item 11, damage is never silent: what the chain alone cannot see, the index can.

Each test edits a real spine the way a user (or a bad disk) would and runs
the real ``hz``: the heinzel stays listed and is marked damaged, a wake is
refused with ``HZE001``, ``verify`` names the seq, and ``verify --accept``
records the acceptance. Each test's name says the promise it pins.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from hz_kernel.store.envelope import GENESIS, line_hash
from tests.support.drafted import Drafted, build_drafted, coded_only, copy_drafted


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Drafted:
    return build_drafted(tmp_path_factory.mktemp("drafted"))


@pytest.fixture
def world(original: Drafted, tmp_path: Path) -> Drafted:
    return copy_drafted(original, tmp_path / "world")


def _lines(world: Drafted) -> list[bytes]:
    return world.spine.read_bytes().splitlines(keepends=True)


def _assert_damaged_at(world: Drafted, seq: int) -> None:
    """verify names ``seq``; list shows the heinzel, damaged; a wake is refused with HZE001."""
    verified = world.hz("heinzel", "verify", "--json")
    coded_only(verified)
    assert verified.returncode == 1
    assert verified.stderr.startswith("HZS033: dig: ")
    assert f"(seq {seq})" in verified.stderr
    (report,) = json.loads(verified.stdout)
    assert report["ok"] is False and report["problems"][0]["seq"] == seq

    listed = world.hz("heinzel", "list", "--json")
    coded_only(listed)
    (row,) = json.loads(listed.stdout)
    assert row["name"] == "dig" and row["damaged"] is True

    woken = world.hz("heinzel", "wake", "dig")
    coded_only(woken)
    assert woken.returncode == 1 and woken.stderr.startswith("HZE001: ")


def test_an_edit_of_the_last_line_is_damage_the_index_sees(world: Drafted) -> None:
    """Issue 12 item 11: no later line records the last line's hash; the index does."""
    lines = _lines(world)
    before = len(world.events())
    lines[-1] = lines[-1].replace(b'"disposition":"drafted"', b'"disposition":"nothing"')
    world.spine.write_bytes(b"".join(lines))
    _assert_damaged_at(world, before)


def test_a_spine_cut_at_a_line_boundary_is_damage(world: Drafted) -> None:
    """Issue 12 item 11: a spine shorter than the index knows is damaged, not a new truth."""
    lines = _lines(world)
    world.spine.write_bytes(b"".join(lines[:-3]))
    _assert_damaged_at(world, len(lines))


def test_a_spine_truncated_to_zero_bytes_stays_listed_as_damaged(world: Drafted) -> None:
    """Issue 12 item 11: an emptied spine never makes its heinzel vanish from the listing."""
    count = len(_lines(world))
    world.spine.write_bytes(b"")
    _assert_damaged_at(world, count)
    shown = world.hz("heinzel", "show", "dig")
    assert shown.returncode == 0 and "DAMAGED" in shown.stdout


def test_damage_survives_every_later_look_until_it_is_accepted(world: Drafted) -> None:
    """Issue 12 item 11: other commands and a reindex keep the damage; only --accept settles it."""
    lines = _lines(world)
    world.spine.write_bytes(b"".join(lines[:-1]))
    refused = world.hz("heinzel", "pause", "dig")
    coded_only(refused)
    assert refused.returncode == 1 and refused.stderr.startswith("HZS095: ")
    assert world.hz("heinzel", "reindex").returncode == 0
    _assert_damaged_at(world, len(lines))

    accepted = world.hz("heinzel", "verify", "dig", "--accept", "--json")
    assert accepted.returncode == 0, accepted.stderr
    (report,) = json.loads(accepted.stdout)
    assert report["accepted_now"] and [p["problem"] for p in report["problems"]] == ["truncated"]
    assert world.events()[-1]["kind"] == "chain.accepted"
    assert world.hz("heinzel", "verify").returncode == 0
    (row,) = json.loads(world.hz("heinzel", "list", "--json").stdout)
    assert row["damaged"] is False


def test_a_line_edited_again_after_accept_is_damage_again(world: Drafted) -> None:
    """Issue 12 item 11: an acceptance covers the bytes the user saw, not the next edit."""
    lines = _lines(world)
    lines[2] = lines[2].replace(b'"kind":"', b'"kind": "', 1)
    world.spine.write_bytes(b"".join(lines))
    assert world.hz("heinzel", "verify", "dig").returncode == 1
    assert world.hz("heinzel", "verify", "dig", "--accept").returncode == 0
    assert world.hz("heinzel", "verify", "dig").returncode == 0

    lines = _lines(world)
    lines[2] = lines[2].replace(b'"kind": "', b'"kind":  "', 1)
    world.spine.write_bytes(b"".join(lines))
    verified = world.hz("heinzel", "verify", "dig")
    coded_only(verified)
    assert verified.returncode == 1 and "(seq 3)" in verified.stderr


def test_the_last_line_edited_after_accept_is_damage_again(world: Drafted) -> None:
    """Issue 12 item 11: after --accept the index holds the accepted last line; its edit shows."""
    world.spine.write_bytes(b"".join(_lines(world)[:-1]))
    assert world.hz("heinzel", "verify", "dig", "--accept").returncode == 0
    lines = _lines(world)
    lines[-1] = lines[-1].replace(b'"problem":"truncated"', b'"problem":"edited"')
    world.spine.write_bytes(b"".join(lines))
    _assert_damaged_at(world, len(lines))


@pytest.mark.parametrize("verb", ["approve", "reject"])
@pytest.mark.parametrize("damage", ["cut", "edited"])
def test_a_decision_on_a_damaged_spine_is_refused_before_the_document_changes(
    world: Drafted, verb: str, damage: str
) -> None:
    """Issue 12 item 11: approve/reject on a damaged spine says HZE001 and changes nothing.

    Today a cut spine answers "approved" (the tag line is deleted, nothing is
    recorded) and an edited one deletes the tag line, then says HZE001.
    """
    lines = _lines(world)
    if damage == "cut":
        world.spine.write_bytes(b"".join(lines[:-3]))
    else:
        lines[3] = lines[3].replace(b'"data":{', b'"data":{"x":1,', 1)
        world.spine.write_bytes(b"".join(lines))
    before = world.document.read_bytes()
    decided = world.hz(verb, "dig")
    coded_only(decided)
    assert decided.returncode == 1
    assert decided.stderr.startswith("HZE001: dig: ")
    assert world.document.read_bytes() == before


@pytest.mark.parametrize("ts", [b"12345", b"null"])
def test_issue16_a_line_whose_time_is_no_string_is_damage_not_a_crash(
    world: Drafted, ts: bytes
) -> None:
    """Issue 16 attack: the last line's ``ts`` edited to a number or null, the index gone (so
    every line is positioned anew). Every command answers with codes, none with HZX001, and
    the line is damage that verify names."""
    lines = _lines(world)
    head, _, rest = lines[-1].partition(b'"ts":"')
    lines[-1] = head + b'"ts":' + ts + rest.partition(b'"')[2]
    world.spine.write_bytes(b"".join(lines))
    for index_file in world.home.glob("heinzel/index.sqlite*"):
        index_file.unlink()
    for command in (("heinzel", "reindex", "--json"), ("heinzel", "list", "--json")):
        coded_only(world.hz(*command))
    verified = world.hz("heinzel", "verify", "dig")
    coded_only(verified)
    assert verified.returncode == 1 and verified.stderr.startswith("HZS033: dig: ")
    (row,) = json.loads(world.hz("heinzel", "list", "--json").stdout)
    assert row["damaged"] is True


@pytest.fixture(scope="module")
def pair_original(tmp_path_factory: pytest.TempPathFactory) -> Drafted:
    """The drafted world plus a second heinzel, ``two``, that nothing ever damages."""
    world = build_drafted(tmp_path_factory.mktemp("pair"))
    made = world.hz(
        "heinzel", "new", "--template", "digest", "--param", "name=two",
        "--param", "notes=notes", "--param", "document=reports/two.md",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return world


def _rechain(lines: list[bytes]) -> bytes:
    """The lines with every ``prev`` recomputed as the writer does: the chain holds."""
    out, prev = [], GENESIS
    for line in lines:
        envelope = orjson.loads(line)
        envelope["prev"] = prev
        out.append(orjson.dumps(envelope))
        prev = line_hash(out[-1])
    return b"".join(line + b"\n" for line in out)


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [
        ("turn.finished", "data.usd", "x"),
        ("draft.placed", "data.key", ["k"]),
        ("step.done", "data.step", 7),
        ("draft.placed", "data.hash", None),
        ("turn.started", "data", [1]),
        ("step.done", "turn", 7),
        ("step.done", "seq", "9"),
    ],
    ids=[
        "usd-text", "key-list", "step-number", "hash-missing", "payload-list", "turn-number",
        "seq-text",
    ],
)  # fmt: skip
def test_s11_a_payload_of_the_wrong_type_damages_its_heinzel_only(
    pair_original: Drafted, tmp_path: Path, kind: str, field: str, value: object
) -> None:
    """s11 (attack pass): the last line of ``kind`` in dig's spine edited so ``field`` has
    the wrong type (``None``: is missing), every ``prev`` recomputed so only the type is
    wrong, the index gone. Reindex, list, show and verify answer with codes, never HZX001:
    dig is damaged at that seq, ``two`` is listed and verified as before, and ``verify
    --accept`` settles it as any other damage."""
    world = copy_drafted(pair_original, tmp_path / "world")
    lines = world.spine.read_bytes().splitlines()
    at = max(i for i, line in enumerate(lines) if orjson.loads(line)["kind"] == kind)
    envelope = orjson.loads(lines[at])
    if field.startswith("data.") and value is None:
        del envelope["data"][field[5:]]
    elif field.startswith("data."):
        envelope["data"][field[5:]] = value
    else:
        envelope[field] = value
    lines[at] = orjson.dumps(envelope)
    world.spine.write_bytes(_rechain(lines))
    for index_file in world.home.glob("heinzel/index.sqlite*"):
        index_file.unlink()
    # A seq that is no number cannot be chained: the line is no event object, at no seq.
    problem, seq = ("not-an-object", None) if field == "seq" else ("mistyped", at + 1)

    reindexed = world.hz("heinzel", "reindex", "--json")
    coded_only(reindexed)
    assert json.loads(reindexed.stdout)["damaged"] == [world.heinzel_id]
    listed = world.hz("heinzel", "list", "--json")
    coded_only(listed)
    assert listed.returncode == 0
    assert {r["name"]: r["damaged"] for r in json.loads(listed.stdout)} == {
        "dig": True,
        "two": False,
    }
    shown = world.hz("heinzel", "show", "dig")
    coded_only(shown)
    assert shown.returncode == 0 and "DAMAGED" in shown.stdout

    verified = world.hz("heinzel", "verify", "--json")
    coded_only(verified)
    assert verified.returncode == 1
    assert verified.stderr.startswith("HZS033: dig: chain broken at byte ") and (
        f"(seq {seq})" in verified.stderr
    )
    reports = {r["name"]: r for r in json.loads(verified.stdout)}
    assert reports["two"]["ok"] is True
    assert [(p["problem"], p["seq"]) for p in reports["dig"]["problems"]] == [(problem, seq)]

    accepted = world.hz("heinzel", "verify", "dig", "--accept")
    assert accepted.returncode == 0, accepted.stderr
    assert world.hz("heinzel", "verify").returncode == 0
    listed = world.hz("heinzel", "list", "--json")
    assert not any(r["damaged"] for r in json.loads(listed.stdout))
