"""issue 14 item 3: the review desk's diff model (changed lines, folded context, changed words)."""

from __future__ import annotations

from hz_tui import diffing
from hz_tui.diffing import Block, Gap, Line


def marked(line: Line) -> list[str]:
    return [line.text[a:b] for a, b in line.marks]


def test_no_change_is_an_empty_diff() -> None:
    diff = diffing.compare("a\nb\n", "a\nb")
    assert not diff.changed and diff.parts == ()
    assert not diffing.compare("", "").changed


def test_a_changed_word_is_marked_on_both_sides() -> None:
    diff = diffing.compare(
        "- shipped search\n- fixed login\n", "- shipped fuzzy search\n- fixed login\n"
    )
    assert (diff.removed, diff.added) == (1, 1)
    block = next(p for p in diff.parts if isinstance(p, Block) and p.changed)
    (old,) = block.old
    (new,) = block.new
    assert (old.kind, old.number, new.kind, new.number) == ("old", 1, "new", 1)
    assert marked(old) == []  # nothing was taken out of the line: only an insertion
    assert marked(new) == ["fuzzy"]
    unified = list(diff.unified())
    assert [(line.kind, line.text) for line in unified if isinstance(line, Line)] == [
        ("old", "- shipped search"),
        ("new", "- shipped fuzzy search"),
        ("same", "- fixed login"),
    ]


def test_a_replaced_word_is_marked_where_it_stands() -> None:
    old, new = diffing.word_marks("the cat sat on the mat", "the dog sat on the mat")
    assert old == ((4, 7),) and new == ((4, 7),)


def test_rewritten_lines_get_no_word_marks_only_their_colour() -> None:
    old, new = diffing.word_marks("entirely different words here", "nothing alike, at all: 42")
    assert old == () and new == ()


def test_very_long_lines_skip_word_marks() -> None:
    long = "word " * (diffing.MAX_MARKED_CHARS // 5)
    assert diffing.word_marks(long, long + "more") == ((), ())


def test_long_unchanged_runs_fold_into_gaps_with_context_around_each_change() -> None:
    before = [f"line {n}" for n in range(1, 41)]
    after = list(before)
    after[4] = "line five"
    after[29] = "line thirty"
    diff = diffing.compare("\n".join(before), "\n".join(after))
    kinds = [type(p).__name__ for p in diff.parts]
    assert isinstance(diff.parts[0], Gap) and diff.parts[0].lines == 1
    assert isinstance(diff.parts[-1], Gap) and diff.parts[-1].lines == 40 - 33
    middle = [p for p in diff.parts if isinstance(p, Gap)][1]
    assert middle.lines == 26 - 9 + 1 - 1 + 1  # lines 9..26 lie between the two hunks' context
    assert kinds.count("Gap") == 3
    shown = [line.number for line in diff.unified() if isinstance(line, Line)]
    assert shown[:4] == [2, 3, 4, 5] and 30 in shown


def test_side_by_side_rows_pair_removed_and_added_lines() -> None:
    diff = diffing.compare("a\nb\nc\n", "a\nB\nnew\nc\n")
    block = next(p for p in diff.parts if isinstance(p, Block) and p.changed)
    rows = [(o.text if o else None, n.text if n else None) for o, n in block.rows()]
    assert rows == [("b", "B"), (None, "new")]


def test_a_first_draft_diffs_against_nothing_as_all_added() -> None:
    diff = diffing.compare("", "# Digest\n- one\n")
    assert (diff.removed, diff.added) == (0, 2)
    assert [line.kind for line in diff.unified() if isinstance(line, Line)] == ["new", "new"]


def test_a_big_section_diffs_with_marks_only_where_lines_changed() -> None:
    before = "\n".join(f"- item {n} of the weekly digest" for n in range(5000))
    after = before.replace("- item 2500 of", "- item 2500 (moved) of")
    diff = diffing.compare(before, after)
    changed = [p for p in diff.parts if isinstance(p, Block) and p.changed]
    assert len(changed) == 1 and (diff.removed, diff.added) == (1, 1)
    assert marked(changed[0].new[0]) == ["(moved)"]
    assert sum(1 for _ in diff.unified()) == 2 * diffing.CONTEXT + 2 + 2


def test_the_old_side_numbers_its_own_lines() -> None:
    """issue 14 item 3 (tester): the "last approved" side numbers the old text's own lines,
    running on without gaps; the draft's side numbers the draft's. Two lines were inserted
    at the top, so every unchanged line sits two lines lower in the draft."""
    before = "\n".join(f"line {n}" for n in range(1, 7))
    after = "new a\nnew b\n" + before.replace("line 4", "line four")
    diff = diffing.compare(before, after, context=10)
    rows = [
        (old.number if old else None, new.number if new else None)
        for part in diff.parts
        if isinstance(part, Block)
        for old, new in part.rows()
    ]
    assert rows == [(None, 1), (None, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 7), (6, 8)]
    unchanged = [line for part in diff.parts if isinstance(part, Block) for line in part.old]
    assert all(line.text == f"line {line.number}" for line in unchanged if line.kind == "same")
