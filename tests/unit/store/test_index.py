"""The derived index: rebuilt from spines, equal to a direct scan, honest after changes."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hz_kernel.clock import now_utc
from hz_kernel.commands.tick import TICK_QUERY
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.overview import HeinzelSummary
from hz_kernel.store import rebuild
from hz_kernel.store.index import ALL_TABLES, Index
from hz_kernel.store.rebuild import POOL_FROM
from hz_kernel.store.scan import scan_file
from hz_kernel.store.session import project
from hz_kernel.store.spine import SPINE_NAME, SpineWriter
from hz_kernel.vocabulary import (
    ApprovalObserved,
    ContractApproved,
    DraftPlaced,
    LessonDismissed,
    LessonRecorded,
    QuestionAsked,
    StepDone,
    TurnFinished,
    TurnSkipped,
    TurnStarted,
)


async def _busy_heinzel(kernel: Kernel, name: str, turns: int) -> str:
    heinzel_id = await kernel.create_heinzel(name)
    async with kernel.holding(heinzel_id) as held:
        await held.append(ContractApproved(version=1, fingerprint="f" * 64))
        for n in range(turns):
            turn = f"01JTURN{n:019d}"
            key = f"{heinzel_id}@2026-10-{n + 1:02d}T15:00"
            await held.append(
                TurnStarted(cause="schedule", keys=[key], contract_version=1), turn=turn, key=key
            )
            for step in ("gather", "think", "outcome", "act"):
                await held.append(StepDone(step=step, report="ok"), turn=turn)
            draft_key = f"{heinzel_id}@v1@{n}@doc:r.md"
            await held.append(
                DraftPlaced(key=draft_key, asset="doc:r.md", hash="h", size=10, contract_version=1),
                turn=turn,
                key=draft_key,
            )
            await held.append(
                TurnFinished(
                    disposition="drafted", causes=["schedule"], usd=0.25, report="drafted"
                ),
                turn=turn,
            )
        await held.append(
            ApprovalObserved(key=draft_key, share_changed=0.2, output_fp="o" * 64), turn=turn
        )
        await held.append(LessonRecorded(lesson_id="L1", lesson="risks go first"))
        await held.append(LessonRecorded(lesson_id="L2", lesson="no ticket numbers"))
        await held.append(LessonDismissed(lesson_id="L2"))
        await held.append(QuestionAsked(key=f"{heinzel_id}@q1", question="which team?"))
    return heinzel_id


async def _dump(kernel: Kernel) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for table in ALL_TABLES:
        if table.name == "spines":
            continue
        order = ", ".join(table.key)
        out[table.name] = await kernel.index.fetch(
            table.name, f"SELECT * FROM {table.name} ORDER BY {order}"
        )
    return out


async def test_index_rebuilt_from_spines_equals_the_live_index(home: Home) -> None:
    kernel = await Kernel.open(home)
    for i in range(4):
        await _busy_heinzel(kernel, f"h{i}", turns=3 + i)
    live = await _dump(kernel)
    await kernel.close()

    home.index_path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{home.index_path}{suffix}").unlink(missing_ok=True)
    rebuilt_kernel = await Kernel.open(home)
    rebuilt = await _dump(rebuilt_kernel)
    report = await rebuilt_kernel.reindex()
    again = await _dump(rebuilt_kernel)
    await rebuilt_kernel.close()
    assert rebuilt == live == again
    assert report.heinzels == 4 and report.events > 0


async def test_a_reindex_leaves_every_secondary_index_built(kernel: Kernel, home: Home) -> None:
    """A rebuild of the whole home drops the secondary indexes and builds them after its
    rows: each is back, holds every row, and the queries that lean on it still use it."""
    await _busy_heinzel(kernel, "weekly", turns=3)
    await kernel.reindex()
    w = kernel.index.writer
    built = {name for (name,) in w.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {
        "turns_by_status",
        "drafts_by_status",
        "costs_by_day",
        "notices_by_key",
        "heinzels_by_name",
        "heinzels_by_state",
    } <= built
    assert w.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    plan = w.execute("EXPLAIN QUERY PLAN SELECT heinzel FROM turns WHERE status = 'running'")
    assert "turns_by_status" in " ".join(str(step[-1]) for step in plan)


async def test_a_reindex_stages_positions_in_memory_and_leaves_no_staging(
    kernel: Kernel,
) -> None:
    """A rebuild stages a home's feed positions in temporary tables: they live in memory
    (SQLite would spill them to a file outside the home) and are gone once it commits."""
    await _busy_heinzel(kernel, "weekly", turns=3)
    await kernel.reindex()
    w = kernel.index.writer
    assert w.execute("PRAGMA temp_store").fetchone() == (2,)
    assert w.execute("SELECT name FROM sqlite_temp_master").fetchall() == []
    positioned = w.execute("SELECT COUNT(*), COUNT(DISTINCT pos) FROM feed").fetchone()
    (events,) = w.execute("SELECT SUM(seq) FROM spines").fetchone()
    assert positioned == (events, events)


async def test_a_rebuild_gives_its_page_cache_back(kernel: Kernel) -> None:
    """A rebuild writes through a page cache sized for a whole home; the writer (a daemon's,
    for as long as it runs) keeps its usual cache once the rebuild is committed."""
    fresh = sqlite3.connect(":memory:")
    usual = fresh.execute("PRAGMA cache_size").fetchone()
    fresh.close()
    await kernel.create_heinzel("weekly")
    await kernel.reindex()
    assert kernel.index.writer.execute("PRAGMA cache_size").fetchone() == usual


async def test_an_index_overwritten_or_removed_under_its_kernel_is_seen_as_such(
    kernel: Kernel,
) -> None:
    """Noise over the file, the file gone or another file in its place is damage a tick
    heals; an empty file (another process just made it) and something that is no file are
    not, and no read blocks."""
    path = kernel.index.path
    assert not kernel.index.overwritten()
    original = path.read_bytes()
    with path.open("r+b") as same_file:
        same_file.write(os.urandom(4096))
        same_file.flush()
        assert kernel.index.overwritten()
        same_file.seek(0)
        same_file.truncate()
        same_file.flush()
        assert not kernel.index.overwritten()
        same_file.write(original)
    assert not kernel.index.overwritten()
    moved = path.with_name("moved.sqlite")
    path.rename(moved)
    assert kernel.index.overwritten()
    os.mkfifo(path)
    assert not kernel.index.overwritten()
    path.unlink()
    path.write_bytes(original)
    assert kernel.index.overwritten() and kernel.index.replaced()
    path.unlink()
    moved.rename(path)
    assert not kernel.index.overwritten()


async def test_noise_over_pages_the_wal_still_holds_is_healed_by_one_reindex(
    kernel: Kernel,
) -> None:
    """Noise over the file's first pages while the WAL holds newer copies of them: every
    connection still reads whole pages, but the file no longer begins as a database. One
    reindex replaces it; the tick does not find it damaged again and again."""
    await kernel.create_heinzel("kept")
    path = kernel.index.path
    with path.open("r+b") as same_file:
        same_file.write(os.urandom(8192))
    assert kernel.index.overwritten()
    await kernel.reindex()
    assert not kernel.index.overwritten()
    assert _heinzel_names_elsewhere(path) == ["kept"]


def _heinzel_names_elsewhere(path: Path) -> list[str]:
    """The names listed in ``path`` as another process reads them, closing at the end."""
    script = (
        "import sqlite3, sys\n"
        "for (name,) in sqlite3.connect(sys.argv[1]).execute('SELECT name FROM heinzels'):\n"
        "    print(name)\n"
    )
    read = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
    )
    return sorted(read.stdout.split())


async def test_the_ticks_check_of_the_file_keeps_sqlites_locks(kernel: Kernel) -> None:
    """The tick's look at the file's first bytes must not drop this process's locks: with
    them gone, another process closing its last connection took itself for the last user,
    deleted the WAL, and every later commit here reached no one else (a daemon's listing and
    a fresh reader disagreed)."""
    await kernel.create_heinzel("first")
    for _ in range(3):
        assert not kernel.index.overwritten()
    assert "first" in _heinzel_names_elsewhere(kernel.index.path)
    await kernel.create_heinzel("second")
    assert not kernel.index.overwritten()
    assert _heinzel_names_elsewhere(kernel.index.path) == ["first", "second"]


async def test_an_index_replaced_under_its_kernel_is_reopened_by_the_reindex(
    kernel: Kernel,
) -> None:
    """Another process removed the index and made a new one: the kernel's commits would go to
    the removed file; the tick's heal (a reindex) opens the new one and fills it."""
    await kernel.create_heinzel("kept")
    path = kernel.index.path
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    sqlite3.connect(path).close()
    assert kernel.index.overwritten()
    await kernel.reindex()
    assert not kernel.index.overwritten()
    assert _heinzel_names_elsewhere(path) == ["kept"]


async def test_index_equals_a_direct_scan_of_each_spine(kernel: Kernel, home: Home) -> None:
    heinzel_id = await _busy_heinzel(kernel, "weekly", turns=3)
    directory = home.heinzel_dir(heinzel_id)
    direct = project(heinzel_id, directory, scan_file(directory / SPINE_NAME))
    row = await kernel.index.heinzel(heinzel_id)
    assert row is not None
    assert {k: row[k] for k in direct.heinzel} == direct.heinzel
    assert row["state"] == "waiting" and row["pending_question"] == f"{heinzel_id}@q1"
    assert row["lessons_active"] == 1 and row["turns_count"] == 3
    turns = await kernel.index.rows_of("turns", heinzel_id)
    assert [t["disposition"] for t in turns] == ["drafted"] * 3


async def test_a_spine_that_moved_behind_the_index_is_rebuilt_on_open(home: Home) -> None:
    kernel = await Kernel.open(home)
    heinzel_id = await _busy_heinzel(kernel, "weekly", turns=1)
    await kernel.close()
    with SpineWriter.open(home.heinzel_dir(heinzel_id)) as writer:
        writer.append(LessonRecorded(lesson_id="L9", lesson="shorter headings"))
    kernel = await Kernel.open(home)
    lessons = await kernel.index.rows_of("lessons", heinzel_id)
    await kernel.close()
    assert "L9" in {lesson["lesson_id"] for lesson in lessons}


async def test_list_filters_and_show(kernel: Kernel) -> None:
    await _busy_heinzel(kernel, "alpha", turns=2)
    await kernel.create_heinzel("beta")
    everything = await kernel.list_heinzels()
    assert [h.name for h in everything.items] == ["alpha", "beta"]
    assert [h.name for h in (await kernel.list_heinzels(state="proposed")).items] == ["beta"]
    beta = next(h.id for h in everything.items if h.name == "beta")
    assert [h.name for h in (await kernel.list_heinzels(ids=[beta, "hz-gone"])).items] == ["beta"]
    assert (await kernel.list_heinzels(ids=[])).items == []
    detail = await kernel.show("alpha")
    assert len(detail.turns) == 2 and detail.cost_month.by_cause.keys() <= {"schedule"}
    assert [lesson.dismissed for lesson in detail.lessons] == [False, True]


async def test_a_listing_is_what_validating_the_index_rows_gives(kernel: Kernel) -> None:
    """Issue 16: the listing builds its summaries from the index's rows without validating
    them again; each must equal, field for field and in its JSON, the summary validated from
    the whole row (with today's cost), however the heinzel stands."""
    await _busy_heinzel(kernel, "alpha", turns=2)
    await kernel.create_heinzel("beta")
    damaged = await kernel.create_heinzel("gamma")
    await kernel.index.set_damaged(damaged, True)
    listed = (await kernel.list_heinzels()).items
    day = now_utc().date().isoformat()
    validated = [
        HeinzelSummary.model_validate({**row, "next_due": listed_row.next_due})
        for row, listed_row in zip(await kernel.index.list_heinzels(day=day), listed, strict=True)
    ]
    assert [s.name for s in listed] == ["alpha", "beta", "gamma"]
    assert listed == validated
    assert [s.model_dump_json() for s in listed] == [s.model_dump_json() for s in validated]
    assert listed[2].damaged is True and listed[0].damaged is False


async def test_verify_reports_then_accepts_a_break(kernel: Kernel, home: Home) -> None:
    heinzel_id = await _busy_heinzel(kernel, "weekly", turns=2)
    kernel.release(heinzel_id)
    spine = home.heinzel_dir(heinzel_id) / SPINE_NAME
    lines = spine.read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b'"ok"', b'"OK"')
    spine.write_bytes(b"\n".join(lines))
    (report,) = await kernel.verify("weekly")
    assert not report.ok and report.problems[0].seq == 5
    assert (await kernel.index.heinzel(heinzel_id) or {})["damaged"] == 1
    (accepted,) = await kernel.verify("weekly", accept=True)
    assert accepted.ok and accepted.accepted_now and accepted.problems[0].accepted
    (later,) = await kernel.verify("weekly")
    assert later.ok
    assert (await kernel.index.heinzel(heinzel_id) or {})["damaged"] == 0


async def test_a_turn_under_way_does_not_show_the_last_turns_outcome(kernel: Kernel) -> None:
    """A row whose turn started says nothing of how the turn before it ended (the home showed
    "learned 6s ago" for a turn that was still thinking); the new turn's end sets it again."""
    heinzel_id = await _busy_heinzel(kernel, "weekly", turns=1)
    turn = "01JTURN" + "9" * 19
    async with kernel.holding(heinzel_id) as held:
        await held.append(TurnStarted(cause="asked", keys=[], contract_version=1), turn=turn)
        under_way = (await kernel.list_heinzels(ids=[heinzel_id])).items[0]
        await held.append(
            TurnFinished(disposition="learned", causes=["asked"], usd=0.0, report="noted"),
            turn=turn,
        )
    ended = (await kernel.list_heinzels(ids=[heinzel_id])).items[0]

    assert (under_way.state, under_way.last_turn, under_way.last_cause) == ("awake", turn, "asked")
    assert under_way.last_disposition is None and under_way.last_report is None
    assert (ended.last_disposition, ended.last_report) == ("learned", "noted")


async def test_a_heinzel_folder_hz_cannot_lock_does_not_hide_the_others(home: Home) -> None:
    """Attack pass (issue 14): one heinzel folder hz may not write to (mode 000 for a user; a
    directory where its lock goes, here, as tests run as root) left the whole home listed
    empty. Every other heinzel is listed; the one folder is a coded warning."""
    from hz_kernel.store.spine import LOCK_NAME

    kernel = await Kernel.open(home)
    healthy = await _busy_heinzel(kernel, "healthy", turns=1)
    blocked = await _busy_heinzel(kernel, "blocked", turns=1)
    await kernel.close()
    for suffix in ("", "-wal", "-shm"):  # a fresh index: every spine is read again
        (home.heinzel_root / f"index.sqlite{suffix}").unlink(missing_ok=True)
    lock = home.heinzel_dir(blocked) / LOCK_NAME
    lock.unlink(missing_ok=True)
    lock.mkdir()

    kernel = await Kernel.open(home)
    try:
        listed = await kernel.list_heinzels()
    finally:
        await kernel.close()

    assert healthy in {row.id for row in listed.items}
    assert any(LOCK_NAME in warning and "HZS" in warning for warning in listed.warnings)


async def test_the_idle_tick_reads_each_heinzel_row_once_and_no_turns(tmp_path: Path) -> None:
    """Issue 16: the tick's query passes over the heinzels once, and whether a turn ran
    under the current contract is the row's ``rendered_version``, never a look at its turns
    (a year of daily turns made the idle tick 30 ms instead of 2)."""
    index = await Index.open(tmp_path / "index.sqlite")
    try:
        plan = [
            row[3]
            for row in index.writer.execute(
                f"EXPLAIN QUERY PLAN {TICK_QUERY}", ("day", "key", "{}", "[]")
            )
        ]
    finally:
        await index.close()
    assert [step for step in plan if "heinzels" in step or step.startswith("SCAN h")] == ["SCAN h"]
    assert not [step for step in plan if " turns " in f" {step} "]


async def test_rendered_version_is_the_newest_version_a_turn_not_for_an_approval_ran_under(
    kernel: Kernel,
) -> None:
    """The row's ``rendered_version`` says what the tick once asked the turns: the newest
    contract version a turn ran under whose cause is not an approval (a skip that makes a
    turn's cause an approval takes its version back)."""
    heinzel_id = await kernel.create_heinzel("alpha")

    async def rendered() -> int | None:
        row = await kernel.index.heinzel(heinzel_id)
        assert row is not None
        return row["rendered_version"]  # type: ignore[no-any-return]

    async with kernel.holding(heinzel_id) as held:
        await held.append(ContractApproved(version=1, fingerprint="f" * 64))
        assert await rendered() is None
        await held.append(
            TurnStarted(cause="approval", keys=["k1"], contract_version=1), turn="01JT1", key="k1"
        )
        assert await rendered() is None
        await held.append(
            TurnStarted(cause="schedule", keys=["k2"], contract_version=1), turn="01JT2", key="k2"
        )
        assert await rendered() == 1
        await held.append(ContractApproved(version=2, fingerprint="e" * 64))
        await held.append(
            TurnStarted(cause="source-changed", keys=["k3"], contract_version=2),
            turn="01JT3",
            key="k3",
        )
        assert await rendered() == 2
        await held.append(
            TurnSkipped(reason="nothing-moved", causes=["approval"], keys=["k3"]), turn="01JT3"
        )
        assert await rendered() == 1


async def test_a_skip_without_a_start_is_the_last_turn_with_its_cause(kernel: Kernel) -> None:
    """A delegate's ``held-by`` skip never started: the row names its cause as ``show`` does,
    and ``turns_count`` counts only turns that started (found by the new-user pass)."""
    heinzel_id = await kernel.create_heinzel("weekly")
    turn = "01JTURN" + "8" * 19
    async with kernel.holding(heinzel_id) as held:
        await held.append(ContractApproved(version=1, fingerprint="f" * 64))
        await held.append(
            TurnSkipped(
                causes=["discovered", "created"], keys=[], reason="held-by", holder="priya"
            ),
            turn=turn,
        )
    row = (await kernel.list_heinzels(ids=[heinzel_id])).items[0]
    shown = (await kernel.show(ref=heinzel_id)).turns[0]
    assert (row.last_turn, row.last_cause, row.last_disposition) == (
        turn,
        "discovered",
        "skipped",
    )
    assert (shown.turn, shown.cause) == (turn, row.last_cause)
    assert row.turns_count == 0


async def _home_for_workers(home: Home) -> tuple[list[str], dict[str, list[dict[str, Any]]]]:
    """A home big enough that a reindex folds its spines in worker processes, with its live
    index as the writer kept it (feed positions included)."""
    kernel = await Kernel.open(home)
    ids = [await _busy_heinzel(kernel, f"busy{i}", turns=2 + i) for i in range(3)]
    ids += [await kernel.create_heinzel(f"h{i:03d}") for i in range(POOL_FROM + 5)]
    live = await _dump(kernel)
    live["feed"] = await kernel.index.fetch("", _FEED)
    await kernel.close()
    return ids, live


_FEED = (
    "SELECT pos, heinzel, seq, offset FROM feed JOIN feed_spine ON spine = feed_spine.id "
    "ORDER BY pos"
)


async def test_a_reindex_folded_by_worker_processes_equals_the_live_index(home: Home) -> None:
    """Issue 16: a home folded by workers while the rows are written gives the rows and feed
    positions the writer kept, reindexed over its index or from none; no worker outlives it."""
    ids, live = await _home_for_workers(home)
    kernel = await Kernel.open(home)
    report = await kernel.reindex()
    again = await _dump(kernel)
    again["feed"] = await kernel.index.fetch("", _FEED)
    await kernel.close()
    assert again == live
    assert report.heinzels == len(ids) and report.damaged == []
    assert multiprocessing.active_children() == []

    home.index_path.unlink()
    kernel = await Kernel.open(home, reconcile=False)
    await kernel.reindex()
    fresh = await _dump(kernel)
    await kernel.close()
    assert fresh == {name: rows for name, rows in live.items() if name != "feed"}


async def test_damage_found_by_worker_processes_is_reported_and_spares_the_others(
    home: Home,
) -> None:
    """A spine edited mid-chain, one that is not a file, and one cut behind the index are each
    damage of that heinzel only, as when folded in one process: the rest is reindexed."""
    ids, live = await _home_for_workers(home)
    edited, fifo, cut = ids[0], ids[1], ids[5]
    spine = home.heinzel_dir(edited) / SPINE_NAME
    lines = spine.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b'"report":"ok"', b'"report":"OK"')
    spine.write_bytes(b"\n".join(lines))
    os.replace(home.heinzel_dir(fifo) / SPINE_NAME, home.heinzel_dir(fifo) / "kept.jsonl")
    os.mkfifo(home.heinzel_dir(fifo) / SPINE_NAME, 0o600)
    (home.heinzel_dir(cut) / SPINE_NAME).write_bytes(b"")

    kernel = await Kernel.open(home, reconcile=False)
    report = await kernel.reindex()
    rows = await _dump(kernel)
    warnings = [w.code for w in kernel.warnings]
    await kernel.close()
    assert sorted(report.damaged) == sorted([edited, fifo, cut])
    assert "HZS011" in warnings
    by_id = {row["id"]: row for row in rows["heinzels"]}
    assert {i for i, row in by_id.items() if row["damaged"]} == {edited, fifo, cut}
    assert by_id[cut] == {**next(r for r in live["heinzels"] if r["id"] == cut), "damaged": 1}
    spared = set(ids) - {edited, fifo, cut}
    for table in ("heinzels", "turns", "drafts"):
        column = "id" if table == "heinzels" else "heinzel"
        kept = [r for r in live[table] if r[column] in spared]
        assert [r for r in rows[table] if r[column] in spared] == kept


def _die() -> None:
    os._exit(137)


class _WorkersThatDie(ProcessPoolExecutor):
    """The standard pool, whose workers die as they start (as if the OOM killer took them)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("initializer", None)
        super().__init__(*args, initializer=_die, **kwargs)


async def test_workers_that_die_leave_the_spines_folded_in_process(
    home: Home, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Workers that die cost time, not rows: the batches they never handed back are folded
    by the reindexing process, and the index equals the live one. What the user is told of
    it is one coded line (hz heinzel reindex prints it on stderr)."""
    ids, live = await _home_for_workers(home)
    monkeypatch.setattr(rebuild, "ProcessPoolExecutor", _WorkersThatDie)
    kernel = await Kernel.open(home)
    report = await kernel.reindex()
    again = await _dump(kernel)
    again["feed"] = await kernel.index.fetch("", _FEED)
    await kernel.close()
    assert report.heinzels == len(ids) and report.damaged == []
    assert again == live
    assert multiprocessing.active_children() == []
    told = [r.getMessage() for r in caplog.records if r.name == rebuild.__name__]
    assert told and all(line.startswith("HZS096: ") for line in told)


_KILLED_MIDWAY = """
import multiprocessing, os, signal, sys
from pathlib import Path
from hz_kernel.home import Home
from hz_kernel.store.rebuild import fold_all
home = Home.resolve(Path(sys.argv[1]))
batches = fold_all([(i, home.heinzel_dir(i), None, n) for n, i in enumerate(home.heinzel_ids())])
next(batches)
print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(sys.platform != "linux", reason="workers fork on Linux only")
async def test_workers_of_a_reindexing_process_killed_midway_do_not_outlive_it(
    home: Home,
) -> None:
    """A reindexing process SIGKILLed (OOM killer, kill -9) while its workers fold leaves no
    orphan behind: an orphan would sleep forever, holding the index and the caller's pipes."""
    await _home_for_workers(home)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_MIDWAY, str(home.root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    workers = [int(pid) for pid in killed.stdout.split()]
    assert workers
    deadline = time.monotonic() + 30
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, workers))
