"""Issue 15 item 5: ``hz heinzel forget NAME TURN`` keeps a turn out of what the model sees.

The command records a ``context.edit``; the next turns' contexts leave the
turn's history out, or show the user's line in its place, while the spine
and the forgotten turn's body keep everything. Real homes and the ``hz``
command; the offline local model.
"""

from __future__ import annotations

from pathlib import Path

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import read_body
from tests.support.homes import World, digest_contract, make_world


def _history(world: World, heinzel: str, turn: str) -> str:
    (context,) = [
        r for r in read_body(world.home / "heinzel" / heinzel, turn) or [] if r["type"] == "context"
    ]
    return next((m for m, label in zip(context["messages"], context["labels"], strict=True)
                 if label == "history"), "")  # fmt: skip


async def test_a_forgotten_turn_leaves_the_models_history_and_its_note_stands_in(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        made = await kernel.new(text=digest_contract())
        await kernel.approve(ref=made.id)
        first = await kernel.wake(ref=made.id)
        (world.notes / "wed.md").write_text("# Wed\n- paid the invoices\n")
        second = await kernel.wake(ref=made.id)
    finally:
        await kernel.close()
    assert _history(world, made.id, second.turn).count("turn (asked)") == 1

    forgot = world.hz("heinzel", "forget", "notes-digest", first.turn)
    assert "out of what the model sees" in forgot.stdout
    twice = world.hz("heinzel", "forget", "notes-digest", first.turn.lower())
    assert twice.stdout == f"turn {first.turn} was already so; nothing changed\n"
    again = world.hz("heinzel", "forget", "notes-digest", "01JC0CKP1T0000000000000000", check=False)
    assert again.returncode != 0 and again.stderr.startswith("HZU242")

    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        third = await kernel.wake(ref=made.id)
        await kernel.forget(ref=made.id, turn=first.turn, instead="the first digest was a test")
        fourth = await kernel.wake(ref=made.id)
    finally:
        await kernel.close()
    # The third turn's history holds the second turn only, not the forgotten first.
    assert _history(world, made.id, third.turn).count("turn (asked)") == 1
    assert "(the user's note) the first digest was a test" in _history(world, made.id, fourth.turn)
    assert read_body(world.home / "heinzel" / made.id, first.turn), "the body keeps the turn"
    edits = [e["data"] for e in world.spine(made.id) if e["kind"] == "context.edit"]
    assert edits == [
        {"target": first.turn},
        {"target": first.turn, "replacement": "the first digest was a test"},
    ]
