"""The cockpit's model on real files: spine tails, the watcher, rows, refresher, prefs, themes."""

from __future__ import annotations

import asyncio
import io
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from hz_kernel.api import HeinzelSummary
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import HeinzelCreated, StepDone
from hz_tui import display, rows, settings, themes
from hz_tui.live import RowRefresher
from hz_tui.tail import SpineTail
from hz_tui.watcher import SpineWatcher
from hz_tui.widgets import preview
from tests.tui import homes

LINE = (
    b'{"v":1,"seq":%d,"ts":"2026-11-20T12:00:00.000000Z","prev":"0","turn":null,'
    b'"kind":"usage","key":null,"data":{}}\n'
)


def test_tail_reads_only_new_whole_lines(tmp_path: Path) -> None:
    spine = tmp_path / "session.jsonl"
    spine.write_bytes(LINE % 1 + LINE % 2)
    tail = SpineTail.at_end(spine)
    assert tail.read_new().lines == []
    with spine.open("ab") as handle:
        handle.write(LINE % 3 + (LINE % 4)[:20])
    first = tail.read_new()
    assert [line.seq for line in first.lines] == [3]
    assert tail.offset == spine.stat().st_size - 20
    with spine.open("ab") as handle:
        handle.write((LINE % 4)[20:])
    assert [line.seq for line in tail.read_new().lines] == [4]
    assert tail.offset == spine.stat().st_size


def test_tail_counts_damage_and_restarts_on_a_shorter_file(tmp_path: Path) -> None:
    spine = tmp_path / "session.jsonl"
    spine.write_bytes(LINE % 1 + b"not json\n" + b"\x00\x00\n" + LINE % 2)
    tail = SpineTail(spine)
    found = tail.read_new()
    assert ([line.seq for line in found.lines], found.unreadable) == ([1, 2], 2)
    spine.write_bytes(LINE % 1)
    again = tail.read_new()
    assert again.restarted and [line.seq for line in again.lines] == [1]
    assert SpineTail(tmp_path / "missing.jsonl").read_new().lines == []


def test_tail_never_follows_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(LINE % 1)
    (tmp_path / "session.jsonl").symlink_to(target)
    assert SpineTail(tmp_path / "session.jsonl").read_new().lines == []


async def test_watcher_delivers_appends_made_by_a_real_kernel(home: Home) -> None:
    kernel = await Kernel.open(home)
    try:
        heinzel = await kernel.create_heinzel("watched")
        watcher = SpineWatcher(home.heinzel_root)
        watcher.prime(home.heinzel_ids())
        batches = []
        arrived = asyncio.Event()

        def deliver(batch: object) -> None:
            batches.append(batch)
            arrived.set()

        task = asyncio.create_task(watcher.run(deliver))
        await asyncio.sleep(0.2)
        event = await kernel.append(heinzel, StepDone(step="gather"))
        await asyncio.wait_for(arrived.wait(), 5)
        assert batches[0].moved == {heinzel: event.seq}
        arrived.clear()
        newcomer = await kernel.create_heinzel("newcomer")
        await asyncio.wait_for(arrived.wait(), 5)
        assert any(newcomer in b.moved for b in batches[1:])
        task.cancel()
    finally:
        await kernel.close()


def test_watcher_ignores_what_is_not_a_spine(home: Home) -> None:
    watcher = SpineWatcher(home.heinzel_root)
    root = str(home.heinzel_root)
    heinzel = homes.heinzel_id(1)
    assert watcher.heinzel_of(f"{root}/{heinzel}/session.jsonl") == heinzel
    assert watcher.heinzel_of(f"{root}/{heinzel}") == heinzel
    assert watcher.heinzel_of(f"{root}/{heinzel}/turns/x.jsonl") is None
    assert watcher.heinzel_of(f"{root}/index.sqlite") is None
    assert watcher.heinzel_of("/elsewhere/session.jsonl") is None


def summary(**fields: object) -> HeinzelSummary:
    base: dict[str, object] = {"id": homes.heinzel_id(1), "name": "weekly", "namespace": "me"}
    return HeinzelSummary.model_validate({"state": "asleep", **base, **fields})


def test_a_row_written_by_hand_with_escape_sequences_is_made_safe_to_draw() -> None:
    """Attack pass (issue 14): a name written into the index with a clear-screen and an OSC 52
    clipboard write reached the terminal raw from the preview and blanked the cockpit."""
    hostile = "x\x1b[2J\x1b]52;c;cHduZWQ=\x07ad\u200bmin\u202eLIVE"
    item = summary(
        name=hostile, last_report=hostile, pending_question=hostile, assets=[f"doc:{hostile}"]
    )
    safe = rows.drawable(item)

    for text in (safe.name, safe.last_report, safe.pending_question, *safe.assets):
        assert text is not None
        assert not any(ord(c) < 0x20 or c in "\u200b\u202e" for c in text), repr(text)
        assert "␛[2J" in text
    clean = summary(name="weekly")
    assert rows.drawable(clean) is clean


def test_filter_matches_every_word_in_name_artifact_state_or_contract() -> None:
    item = summary(
        contract_name="weekly-report", assets=["doc:reports/weekly.md#x"], state="waiting"
    )
    for text, expected in [
        ("", True),
        ("WEEK", True),
        ("reports/weekly", True),
        ("waiting weekly-report", True),
        ("waiting paused", False),
        ("damaged", False),
    ]:
        assert rows.matches(item, rows.filter_terms(text)) is expected, text
    assert rows.matches(summary(damaged=True), ["damaged"])


def test_cells_say_what_waits_and_sort_awake_first() -> None:
    now = datetime(2026, 11, 20, 12, tzinfo=UTC)
    item = summary(pending_draft="k", pending_question="q", state="waiting", cost_today=0.5)
    cells = rows.cells(item, rows.Palette(), now)
    assert cells["waits"].plain == "draft, question"
    assert cells["cost"].plain == "$0.50"
    running = rows.cells(
        summary(state="awake", last_turn_at="2026-11-20T11:00:00Z"), rows.Palette(), now
    )
    assert running["last_turn"].plain == "running 1h"
    assert running["state"].order < cells["state"].order
    assert rows.cells(summary(damaged=True), rows.Palette(), now)["state"].plain == "damaged"


def test_a_turn_no_one_runs_or_no_one_knows_about_never_reads_running() -> None:
    """New-user pass (issue 13) finding 3: a turn a crash cut (the daemon lists it
    ``interrupted``) read "running 28s", and while the daemon was lost the last one's
    "running"/"queued" still read as current."""
    now = datetime(2026, 11, 20, 12, tzinfo=UTC)
    awake = summary(state="awake", last_turn_at="2026-11-20T11:00:00Z")
    cut = rows.cells(awake.model_copy(update={"interrupted": True}), rows.Palette(), now)
    assert cut["last_turn"].plain == "interrupted 1h"
    queued = awake.model_copy(update={"queued": "capacity"})
    for item in (awake, queued):
        assert rows.cells(item, rows.Palette(), now, stale=True)["last_turn"].plain == (
            "not known now"
        )
    done = summary(state="asleep", last_turn_at="2026-11-20T11:00:00Z", last_disposition="drafted")
    assert rows.cells(done, rows.Palette(), now, stale=True)["last_turn"].plain == "drafted 1h ago"


def test_column_widths_fit_both_terminal_sizes() -> None:
    for width in (78, 98, 108, 115, 118, 238):
        widths = rows.column_widths(width, 1)
        assert sum(widths.values()) + 2 * len(widths) <= width
        assert widths["name"] >= rows.NAME_MIN


async def test_refresher_asks_for_the_moved_heinzels_and_notices_gone_and_lagging(
    client,
) -> None:
    refresher = RowRefresher(client)
    few = {homes.heinzel_id(n): None for n in range(1, 4)}
    update, lagging = await refresher.fetch(few)
    assert {row.id for row in update.rows} == set(few) and not lagging
    many = {homes.heinzel_id(n): None for n in range(1, 10)} | {homes.heinzel_id(99): None}
    update, lagging = await refresher.fetch(many)
    assert len(update.rows) == 9 and update.gone == [homes.heinzel_id(99)]
    ahead = {homes.heinzel_id(1): 10_000}
    update, lagging = await refresher.fetch(ahead)
    assert lagging == ahead


def test_prefs_are_private_and_survive_damage(home: Home) -> None:
    assert settings.load_prefs(home) == (settings.CockpitPrefs(), [])
    settings.save_prefs(home, settings.CockpitPrefs(theme="hz-light", keymap={"home.filter": "f"}))
    path = settings.prefs_path(home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert settings.load_prefs(home)[0].theme == "hz-light"
    path.write_text("{not json")
    prefs, problems = settings.load_prefs(home)
    assert prefs == settings.CockpitPrefs() and len(problems) == 1 and "cockpit.json" in problems[0]


def test_prefs_that_cannot_be_saved_are_a_coded_error(home: Home, tmp_path: Path) -> None:
    blocked = Home(tmp_path / "not-there")
    with pytest.raises(HzError) as caught:
        settings.save_prefs(blocked, settings.CockpitPrefs(theme="hz-dark"))
    assert caught.value.code == "HZS080"


def test_themes_load_and_no_color_picks_ansi(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    names = {theme.name for theme in themes.load_themes()}
    assert names == set(themes.THEME_NAMES)
    assert next(t for t in themes.load_themes() if t.name == themes.ANSI).ansi
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert themes.choose_theme("hz-light", "hz-dark", names) == "hz-light"
    assert themes.choose_theme("gone", "hz-ansi", names) == "hz-ansi"
    assert themes.choose_theme(None, "nope", names) == themes.DARK
    monkeypatch.setenv("NO_COLOR", "1")
    assert themes.choose_theme("hz-light", "hz-dark", names) == themes.ANSI
    (tmp_path / "broken.toml").write_text('name = "x"\nprimary = 3\n')
    with pytest.raises(HzError) as caught:
        themes.load_themes(tmp_path)
    assert caught.value.code == "HZU060"


def test_a_home_without_spines_has_nothing_to_tail(home: Home) -> None:
    watcher = SpineWatcher(home.heinzel_root)
    watcher.prime(home.heinzel_ids())
    assert watcher.tails == {}
    assert not watcher.collect([])
    assert os.path.isdir(home.heinzel_root)


async def test_created_heinzel_reads_from_its_first_line(home: Home) -> None:
    kernel = await Kernel.open(home)
    try:
        watcher = SpineWatcher(home.heinzel_root)
        heinzel = await kernel.create_heinzel("fresh")
        await kernel.append(heinzel, HeinzelCreated(name="again"))
        batch = watcher.collect([(None, str(home.heinzel_root / heinzel / "session.jsonl"))])  # type: ignore[list-item]
        assert batch.moved == {heinzel: 2}
    finally:
        await kernel.close()


def test_the_preview_breaks_a_long_path_after_a_slash_never_inside_a_name() -> None:
    """New-user pass (issue 13) finding 9: at 120 columns the home's side panel folded a path
    mid-word, "…/d1.md#toda" then "y". It breaks after a ``/``; a name wider than the panel is
    cut with …."""
    now = datetime(2026, 11, 20, 12, tzinfo=UTC)
    item = summary(assets=["doc:notes/reports/2026/december/d1.md#today"])
    console = Console(width=36, file=io.StringIO(), record=True)
    console.print(preview.describe(item, now, rows.Palette()))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    keeps = lines.index("Keeps     notes/reports/2026/")
    assert lines[keeps + 1].strip() == "december/d1.md#today", lines
    assert display.path_lines("a/averyverylongname.md", 8) == ["a/", "averyve…"]
