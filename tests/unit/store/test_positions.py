"""Feed positions handed out in bulk: increasing, never reused, each spine in its own order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hz_kernel.store import positions
from hz_kernel.store.positions import Spot


def _feed(path: Path) -> sqlite3.Connection:
    w = sqlite3.connect(path, isolation_level=None)
    positions.prepare(w)
    return w


def _order(w: sqlite3.Connection) -> list[tuple[str, int]]:
    rows = w.execute(
        "SELECT heinzel, seq FROM feed JOIN feed_spine ON spine = feed_spine.id ORDER BY pos"
    )
    return [(h, s) for h, s in rows]


def test_lines_interleave_by_time_and_a_clock_gone_back_keeps_its_spines_order(
    tmp_path: Path,
) -> None:
    w = _feed(tmp_path / "index.sqlite")
    back = [
        Spot(1, "2026-10-01T10:00", 0),
        Spot(2, "2026-10-01T12:00", 90),
        Spot(3, "2026-10-01T09:00", 180),
    ]
    other = [Spot(1, "2026-10-01T11:00", 0), Spot(2, "2026-10-01T13:00", 90)]
    assigned, renumbered = positions.assign(w, {"hz-a": back, "hz-b": other})
    assert not renumbered
    assert _order(w) == [("hz-a", 1), ("hz-b", 1), ("hz-a", 2), ("hz-a", 3), ("hz-b", 2)]
    assert sorted(assigned.values()) == [1, 2, 3, 4, 5]
    assert assigned[("hz-a", 3)] == 4


def test_positions_go_on_after_the_highest_ever_handed_out(tmp_path: Path) -> None:
    w = _feed(tmp_path / "index.sqlite")
    lines = [Spot(seq, f"2026-10-01T10:0{seq}", 10 * seq) for seq in range(1, 4)]
    positions.assign(w, {"hz-a": lines})
    positions.forget(w, [("hz-a",)])
    assigned, _ = positions.assign(w, {"hz-b": lines[:1]})
    assert assigned == {("hz-b", 1): 4}
    assert positions.edge(w) == 4
    again, _ = positions.assign(w, {"hz-b": lines})
    assert again == {("hz-b", 2): 5, ("hz-b", 3): 6}


def _staged(w: sqlite3.Connection, spines: dict[str, list[Spot]]) -> bool:
    """Position ``spines`` as a reindex does: staged in two batches, assigned at the end."""
    staging = positions.Staging(w)
    rows = [(h, positions.staged(place, lines)) for place, (h, lines) in enumerate(spines.items())]
    staging.add(rows[:1])
    staging.add(rows[1:])
    return staging.assign()


def test_a_reindex_stages_lines_into_the_order_assign_gives(tmp_path: Path) -> None:
    back = [
        Spot(1, "2026-10-01T10:00", 0),
        Spot(2, "2026-10-01T12:00", 90),
        Spot(3, "2026-10-01T09:00", 180),
    ]
    other = [Spot(1, "2026-10-01T11:00", 0), Spot(2, "2026-10-01T12:00", 90)]
    by_assign = _feed(tmp_path / "assign.sqlite")
    positions.assign(by_assign, {"hz-a": back, "hz-b": other})
    w = _feed(tmp_path / "staged.sqlite")
    assert not _staged(w, {"hz-a": back, "hz-b": other})
    assert _order(w) == _order(by_assign)
    assert w.execute("SELECT name FROM sqlite_temp_master").fetchall() == []


def test_a_reindex_keeps_the_positions_it_finds_and_renumbers_a_cut_spine(
    tmp_path: Path,
) -> None:
    w = _feed(tmp_path / "index.sqlite")
    lines = [Spot(seq, f"2026-10-01T10:0{seq}", 10 * seq) for seq in range(1, 4)]
    positions.assign(w, {"hz-a": lines[:2], "hz-b": lines})
    assert not _staged(w, {"hz-a": lines, "hz-b": lines})
    kept = [("hz-a", 1), ("hz-b", 1), ("hz-a", 2), ("hz-b", 2), ("hz-b", 3)]
    assert _order(w) == [*kept, ("hz-a", 3)]
    assert _staged(w, {"hz-a": lines, "hz-b": lines[:1]})
    assert _order(w)[-1] == ("hz-b", 1)
    assert positions.edge(w) == 7
