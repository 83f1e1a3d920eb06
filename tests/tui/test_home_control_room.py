"""Issue 14 item 5 (and the home's part of item 7): the home as a control room, with Pilot.

A real kernel behind every test: the ten-heinzel home (``homes``) for the
preview, totals, toasts and clock; a real digest heinzel woken through a
long-lived embedded kernel for the live activity.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from textual.widgets import Static
from textual.widgets._toast import Toast
from time_machine import TimeMachineFixture

from hz_kernel import operations as ops
from hz_kernel.client import DeferredClient, LocalClient
from hz_kernel.home import Home
from hz_kernel.operations import Operation, Req, Resp
from hz_kernel.store.envelope import GENESIS, line_hash
from hz_tui import paste, rows
from hz_tui.app import CockpitApp
from hz_tui.notices import MAX_TOASTS
from hz_tui.screens.home import SIDE_WIDE, SIDE_WIDTH, HomeScreen
from hz_tui.screens.notices import NoticesScreen
from hz_tui.widgets.activity import ActivityPane
from hz_tui.widgets.preview import HeinzelPreview
from hz_tui.widgets.status_line import StatusLine
from tests.tui import homes, worlds
from tests.tui.kernels import PassThrough, embedded_client
from tests.tui.test_cockpit import SIZE, open_page, text_of, until
from tests.tui.test_terminals import key_bar_text


class CountsCalls(PassThrough):
    """The kernel's client as it is, counting the operations the cockpit sends through it."""

    def __init__(self, inner: LocalClient) -> None:
        super().__init__(inner)
        self.calls: list[str] = []

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        self.calls.append(operation.name)
        return await self.inner.call(operation, request)


def home_of(app: CockpitApp) -> HomeScreen:
    return app.get_home()


def status_text(app: CockpitApp) -> str:
    return " ".join(text_of(home_of(app).query_one(StatusLine)).split())


def preview_text(app: CockpitApp) -> str:
    return " ".join(text_of(home_of(app).query_one(HeinzelPreview)).split())


async def test_issue14_item5_preview_follows_the_cursor_without_asking_the_kernel(
    cockpit_home: Home, client: LocalClient
) -> None:
    """issue 14 item 5: the preview beside the table shows the highlighted heinzel (state,
    what waits, last report, next due, cost today) and follows the cursor from the rows the
    table holds: moving the cursor sends the kernel nothing. ``o`` hides and shows it."""
    counting = CountsCalls(client)
    app = CockpitApp(cockpit_home, counting, live=False)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        home = home_of(app)
        preview = home.query_one(HeinzelPreview)
        await until(lambda: "of $10.00 today" in status_text(app))
        assert preview.display and preview.item is not None
        assert preview.item.name == "build-health"
        shown = preview_text(app)
        assert "failed (schedule) 59m ago" in shown and "the model stream ended early" in shown
        assert "Next due in 1h" in shown and "Today $0.03" in shown
        before = list(counting.calls)
        await pilot.press("j")
        await until(lambda: preview.item is not None and preview.item.name == "changelog")
        assert "draft (F4 to review)" in preview_text(app)
        await pilot.press("j", "j", "j", "j")
        await until(lambda: preview.item is not None and preview.item.name == "release-notes")
        assert "running, started 1h ago" in preview_text(app)
        assert counting.calls == before, "moving the cursor asked the kernel"
        table = home.query_one("#heinzels")
        narrow = table.size.width
        await pilot.press("o")
        assert not preview.display
        # The table takes the width, the activity a line under it (new-user pass at 120).
        await until(lambda: table.size.width > narrow)
        assert not home.query_one("#side").display and home.query_one("#activity-line").display
        await pilot.press("k")
        await pilot.press("o")
        await until(lambda: preview.item is not None and preview.item.name == "oncall-digest")
        assert preview.display and "question (Enter, then y)" in preview_text(app)


async def test_issue14_item5_preview_hides_by_default_on_a_small_terminal(
    cockpit_home: Home, client: LocalClient
) -> None:
    """issue 14 item 5: at 80×24 the table keeps the width (the preview starts hidden, the
    activity is one line under the table); ``o`` still shows the preview."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        home = home_of(app)
        assert not home.query_one("#side").display
        line = home.query_one("#activity-line", ActivityPane)
        assert line.display
        assert text_of(line).startswith("▸ build-health failed: the model stream ended early")
        assert home.table.size.width == 80
        await pilot.press("o")
        await pilot.pause()
        assert home.query_one("#side").display and home.query_one(HeinzelPreview).display
        assert not line.display


async def test_issue14_item1_at_80_columns_the_preview_gives_way_and_o_shows_it_full_width(
    cockpit_home: Home, client: LocalClient
) -> None:
    """issue 14 items 1 and 5: beside the table, the preview would cut the table's columns at
    80 columns; it gives way (with a toast when it was showing) and ``o`` shows it full width
    in the table's place, saying so; ``o`` or Escape brings the whole table back."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        home = home_of(app)
        preview = home.query_one(HeinzelPreview)
        assert preview.display and home.table.region.width < SIZE[0]
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not home.query_one("#side").display and home.table.region.width == 80
        assert any("preview gives way" in n.message for n in app.notices.history)
        for label in ("Name", "State", "Due", "Last turn", "Waits", "Today"):
            assert label in text_of_table_header(home)

        await pilot.press("o")
        await pilot.pause()
        assert not home.query_one("#list").display, "the table is not squeezed beside it"
        assert preview.display and preview.region.width >= 76
        shown = preview_text(app)
        assert shown.startswith("Preview, full width") and "build-health asleep" in shown
        await pilot.press("escape")
        await pilot.pause()
        assert home.query_one("#list").display and not preview.display
        assert home.table.has_focus and home.table.region.width == 80
        await pilot.press("j", "o")
        await pilot.pause()
        assert preview.item is not None and preview.item.name == "changelog"
        await pilot.press("o")
        await pilot.pause()
        assert home.table.region.width == 80 and home.table.has_focus


async def test_issue14_item1_at_240_columns_the_spare_width_goes_to_what_was_cut(
    cockpit_home: Home, client: LocalClient
) -> None:
    """issue 14 item 1: at 240 columns the table keeps every column whole and what it does not
    need goes to the preview and the activity, whose lines were cut at their fixed width."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(240, 70)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        home = home_of(app)
        table = home.table
        for key in rows.GROWING:
            assert table.widths[key] >= min(table.wanted.get(key, 0), rows.GROWN_MAX), key
        side = home.query_one("#side")
        assert side.region.width > SIDE_WIDE, "the side panes got none of the spare width"
        assert side.region.width <= 120
        assert "failed: the model stream ended early" in text_of(home.activity)
        await pilot.resize_terminal(*SIZE)
        await pilot.pause()
        assert side.region.width == SIDE_WIDTH, "below the wide width the CSS's width is back"


def text_of_table_header(home: HomeScreen) -> str:
    table = home.table
    return "".join(segment.text for segment in table.render_line(0))


@pytest.fixture
async def world(tmp_path: Path) -> worlds.World:
    return worlds.make_world(tmp_path)


@pytest.fixture
async def live_client(world: worlds.World) -> AsyncIterator[LocalClient]:
    async with embedded_client(world) as opened:
        yield opened


async def test_issue14_item5_activity_shows_a_turn_start_finish_and_draft_live(
    world: worlds.World, live_client: LocalClient
) -> None:
    """issue 14 item 5: the activity pane lists what just happened across heinzels, from the
    live spine lines the home already follows: a turn started, a draft placed, the turn done."""
    heinzel = await worlds.add_heinzel(live_client.kernel, world, "notes-digest", wake=False)
    app = CockpitApp(world.home, live_client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        pane = home_of(app).query_one("#activity", ActivityPane)
        await until(lambda: heinzel in app.rows)
        assert "Nothing has happened yet." in text_of(pane)
        await live_client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
        await until(lambda: len(pane.entries) >= 3)
        texts = [(entry.name, entry.text) for entry in pane.entries]
        assert texts[:2] == [
            ("notes-digest", "started (asked)"),
            ("notes-digest", "placed a draft in reports/notes-digest.md#digest"),
        ]
        assert texts[2][1].startswith("Drafted digest: "), "the finished turn's report"
        await pilot.pause()
        shown = text_of(pane)
        assert "placed a draft in reports/notes-digest.md" in shown
        assert shown.index("Drafted digest") < shown.index("started (asked)"), "newest first"


async def test_a_cockpit_opened_again_shows_what_the_spines_say_happened_before_it(
    world: worlds.World, live_client: LocalClient
) -> None:
    """Attack pass: after a restart the activity showed one line per heinzel (its row's last
    turn). It now reads the recent spines' tails: the turn's start, its draft, its end."""
    heinzel = await worlds.add_heinzel(live_client.kernel, world, "notes-digest", wake=False)
    await live_client.call(ops.WAKE, ops.WakeRequest(ref=heinzel))
    spine = world.home.heinzel_dir(heinzel) / "session.jsonl"
    await until(lambda: b'"turn.finished"' in spine.read_bytes())
    app = CockpitApp(world.home, live_client)
    async with app.run_test(size=SIZE):
        await app.loaded.wait()
        pane = home_of(app).query_one("#activity", ActivityPane)
        await until(lambda: len(pane.entries) >= 3)
        texts = [entry.text for entry in pane.entries]
        assert texts[-3:-1] == [
            "started (asked)",
            "placed a draft in reports/notes-digest.md#digest",
        ]
        assert texts[-1].startswith("Drafted digest: ")
        assert all(entry.seq is not None for entry in pane.entries), "none left from the rows"


async def test_issue14_item5_repeated_notices_group_and_the_history_keeps_them(
    cockpit_home: Home, client: LocalClient
) -> None:
    """issue 14 item 5: a notice raised again while its toast shows is one toast with a count;
    no more than ``MAX_TOASTS`` show at once; F5 lists every notice, newest first."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await app.loaded.wait()
        for _ in range(3):
            app.notify("changelog: a draft landed in CHANGELOG.md (F4 to review)")
        await until(lambda: bool(app.screen.query(Toast)))
        await pilot.pause(0.1)
        toasts = list(app.screen.query(Toast))
        assert len(toasts) == 1
        assert "(×3)" in str(toasts[0].render())
        for n in range(5):
            app.notify(f"notice {n}", severity="warning")
        await until(lambda: "notice 4" in str(list(app.screen.query(Toast))[-1].render()))
        await pilot.pause(0.1)
        assert len(app.screen.query(Toast)) == MAX_TOASTS
        assert [n.text for n in app.notices.showing] == ["notice 2", "notice 3", "notice 4"]
        await pilot.press("f5")
        assert isinstance(app.screen, NoticesScreen)
        listed = text_of(app.screen.query_one("#notices", Static))
        assert "changelog: a draft landed in CHANGELOG.md (F4 to review) (×3)" in listed
        assert listed.index("notice 4") < listed.index("notice 0") < listed.index("(×3)")
        app.notify("one more")
        await pilot.pause()
        assert "one more" in text_of(app.screen.query_one("#notices", Static))
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)


async def test_issue14_item5_totals_running_waiting_and_spend_against_the_cap(
    cockpit_home: Home, client: LocalClient
) -> None:
    """issue 14 item 5: the line under the table totals turns running, what waits on the user
    (drafts among it) and today's spending against the daily cap (from ``costs.today``)."""
    (cockpit_home.root / "hz.toml").write_text("[heinzel]\nmax_usd_per_day = 0.05\n")
    capped = await LocalClient.open(Home.resolve(cockpit_home.root))
    try:
        app = CockpitApp(cockpit_home, capped, live=False)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await until(lambda: "today" in status_text(app))
            await pilot.pause()
            line = status_text(app)
            # Waiting: a draft, a question, an amendment and the proposed heinzel's contract.
            assert line.startswith(
                "1 running · 4 waiting on you (1 draft) · $0.09 of $0.05 today: cap reached · "
                "9 heinzels"
            ), line
    finally:
        await capped.close()


async def test_issue14_item5_relative_times_tick_on_one_shared_clock(
    cockpit_home: Home,
    client: LocalClient,
    time_machine: TimeMachineFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """issue 14 item 5: "59m ago" becomes "2h ago" as the clock moves, in the table, the
    preview, the activity and the notices page alike, driven by the app's one ticker."""
    monkeypatch.delenv("HZ_NOW")
    time_machine.move_to(homes.NOW, tick=False)
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        home = home_of(app)
        table = home.table
        first = table.order[0]
        assert table.shown[first]["last_turn"].plain == "failed 59m ago"
        assert "59m ago" in preview_text(app)
        app.notify("hello")
        await pilot.press("f5")
        notices = app.screen.query_one("#notices", Static)
        assert "now" in text_of(notices)
        time_machine.shift(timedelta(hours=1, minutes=1))
        await until(lambda: "1h ago" in text_of(notices))
        await pilot.press("escape")
        await until(lambda: table.shown[first]["last_turn"].plain == "failed 2h ago")
        await until(lambda: "failed (schedule) 2h ago" in preview_text(app))
        pane = home.query_one("#activity", ActivityPane)
        assert text_of(pane).splitlines()[1].startswith("2h")


async def test_issue14_item5_an_empty_home_says_how_to_begin(home: Home, monkeypatch) -> None:
    """issue 14 item 5: a home with no heinzels says how to begin: Ctrl+N, or ``hz demo``."""
    monkeypatch.setenv("HZ_NOW", homes.NOW)
    opened = await LocalClient.open(home)
    try:
        app = CockpitApp(home, opened, live=False)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await pilot.pause()
            empty = app.get_home().query_one("#empty", Static)
            assert empty.display
            shown = " ".join(text_of(empty).split())
            assert "No heinzels yet" in shown and "Press Ctrl+N" in shown and "hz demo" in shown
            bar = key_bar_text(app)
            assert "New" in bar and "Help" in bar
            for gone in ("Open", "Sort", "Approve", "Wake"):
                assert gone not in bar, f"{gone} is offered with no heinzel to act on: {bar}"
    finally:
        await opened.close()


async def test_issue14_item7_a_filter_with_no_match_says_so(
    cockpit_home: Home, client: LocalClient
) -> None:
    """issue 14 item 7: a filter that matches nothing says "no heinzel matches '…'", never
    "no heinzels yet"; clearing it brings the rows back."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        empty = app.get_home().query_one("#empty", Static)
        assert not empty.display
        await pilot.press("slash", *"zzz")
        await pilot.pause()
        assert empty.display
        shown = text_of(empty)
        assert "no heinzel matches 'zzz'" in shown and "No heinzels yet" not in shown
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert not empty.display and app.get_home().table.row_count == 9


async def test_s6_a_long_pasted_filter_is_echoed_cut_and_inert_and_the_preview_matches_nothing(
    cockpit_home: Home, client: LocalClient
) -> None:
    """A 10,000-character paste of words, bidi overrides and escape codes into the filter: the
    filter keeps its text (the escape codes dropped), the no-match line and the status line
    quote it cut to a line with …, nothing in it can act on the terminal, and the preview says
    nothing matches rather than showing the heinzel highlighted before."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        home = home_of(app)
        await until(lambda: "No heinzel selected" not in preview_text(app) and home.preview.shown)
        before = preview_text(app)
        await pilot.press("slash")
        pasted = ("weekly report \u202e\x1b[2J " * 800)[:10000]
        wire = f"\x1b[200~{pasted}\x1b[201~"  # as the terminal sends it, read as the driver does
        (event,) = paste.PasteSafeParser().feed(wire)
        home.filter_bar.post_message(event)
        await pilot.press(*"zq")
        await until(lambda: home.filter_bar.value.endswith("zq"))
        assert "\x1b" not in home.filter_bar.value and "[2J" not in home.filter_bar.value
        empty = home.query_one("#empty", Static)
        await until(lambda: empty.display)
        shown = " ".join(text_of(empty).split())
        quoted = shown.partition("no heinzel matches '")[2].partition("'")[0]
        assert quoted.startswith("weekly report \ufffd weekly") and quoted.endswith("…"), shown
        assert len(quoted) <= 40 and "(Esc clears the filter)" in shown
        status = status_text(app)
        assert "filter: weekly report \ufffd" in status and len(status) < 200, status
        await until(lambda: "No heinzel matches the filter" in preview_text(app))
        assert before.split()[0] not in preview_text(app)
        await pilot.press("escape")
        await until(lambda: not empty.display and preview_text(app) == before)


def damage(home: Home, heinzel: int, *, seq: int) -> Path:
    """Edit one line of a fixture heinzel's spine by hand, so its chain breaks there."""
    spine = home.heinzel_dir(homes.heinzel_id(heinzel)) / "session.jsonl"
    lines = spine.read_bytes().splitlines(keepends=True)
    lines[seq - 1] = lines[seq - 1].replace(b'"seq":%d' % seq, b'"seq":%d,"x":1' % seq, 1)
    assert b'"x":1' in lines[seq - 1]
    spine.write_bytes(b"".join(lines))
    return spine


async def test_attack_a_damaged_heinzel_says_what_broke_where_and_what_to_run(
    cockpit_home: Home,
) -> None:
    """Attack pass: a heinzel whose spine was edited by hand showed only "damaged". The
    preview now gives the check's code, the line (seq and byte) and the spine's path, and
    the command that accepts the break."""
    spine = damage(cockpit_home, 1, seq=3)
    client = await LocalClient.open(cockpit_home)
    try:
        app = CockpitApp(cockpit_home, client, live=False)
        async with app.run_test(size=SIZE):
            await app.loaded.wait()
            table = home_of(app).table
            await until(lambda: table.items[homes.heinzel_id(1)].damaged)
            table.move_cursor(row=table.order.index(homes.heinzel_id(1)))
            await until(lambda: "HZS033" in preview_text(app))
            shown = preview_text(app)
            assert "seq 3" in shown and str(spine) in "".join(shown.split())
            assert "hz heinzel verify weekly-report --accept" in shown
    finally:
        await client.close()


async def test_s11_a_payload_of_the_wrong_type_is_damage_to_one_heinzel_in_the_home(
    cockpit_home: Home,
) -> None:
    """s11 attack: heinzel 1's first line edited so its name is a number, every ``prev``
    recomputed so only the type is wrong, the index gone. The home opens: that heinzel is
    damaged with the check's code and seq in its preview, the others are listed as before."""
    spine = cockpit_home.heinzel_dir(homes.heinzel_id(1)) / "session.jsonl"
    lines, prev = spine.read_bytes().splitlines(), GENESIS
    first = orjson.loads(lines[0])
    first["data"]["name"] = 7
    lines[0] = orjson.dumps(first)
    for at, line in enumerate(lines):
        envelope = orjson.loads(line)
        envelope["prev"] = prev
        lines[at] = orjson.dumps(envelope)
        prev = line_hash(lines[at])
    spine.write_bytes(b"".join(line + b"\n" for line in lines))
    for index_file in cockpit_home.index_path.parent.glob(cockpit_home.index_path.name + "*"):
        index_file.unlink()
    client = await LocalClient.open(cockpit_home)
    try:
        app = CockpitApp(cockpit_home, client, live=False)
        async with app.run_test(size=SIZE):
            await app.loaded.wait()
            table = home_of(app).table
            await until(lambda: table.items[homes.heinzel_id(1)].damaged)
            assert len(table.items) > 1 and homes.heinzel_id(2) in table.items
            assert not any(
                item.damaged for h, item in table.items.items() if h != homes.heinzel_id(1)
            )
            table.move_cursor(row=table.order.index(homes.heinzel_id(1)))
            await until(lambda: "HZS033" in preview_text(app))
            assert "seq 1" in preview_text(app)
    finally:
        await client.close()


async def test_a_damaged_heinzels_page_never_shows_its_turn_as_running(
    cockpit_home: Home,
) -> None:
    """Attack pass: with its spine damaged, a heinzel's page showed a stale "running" turn
    (nothing past the break is read). The live panel now says the spine is damaged, and the
    command that says where."""
    damage(cockpit_home, 5, seq=2)
    client = await LocalClient.open(cockpit_home)
    try:
        app = CockpitApp(cockpit_home, client, live=False)
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            page = await open_page(pilot, homes.heinzel_id(5))
            await until(lambda: page.detail is not None and page.detail.heinzel.damaged)
            steps = page.turn_panel.query_one("#steps", Static)
            await until(lambda: "spine is damaged" in text_of(steps))
            assert "hz heinzel verify release-notes" in text_of(steps)
            assert "running" not in text_of(steps)
    finally:
        await client.close()


async def test_attack_a_home_whose_index_cannot_be_read_says_so_and_recovers_with_r(
    cockpit_home: Home,
) -> None:
    """Attack pass: with the index a directory the home read as an empty one, offering New.
    It now says the heinzels could not be listed and why, offers no New, and once the
    index is moved away ``r`` lists them (the embedded kernel opens on the retry)."""
    index = cockpit_home.index_path
    for stale in index.parent.glob(index.name + "*"):
        stale.unlink()
    index.mkdir()
    client = DeferredClient(cockpit_home)
    try:
        app = CockpitApp(cockpit_home, client)
        async with app.run_test(size=SIZE) as pilot:
            home = home_of(app)
            empty = home.query_one("#empty", Static)
            await until(lambda: "could not be listed" in text_of(empty))
            assert "HZS090" in text_of(empty) and "No heinzels yet" not in text_of(empty)
            assert "New" not in key_bar_text(app)
            index.rmdir()
            await pilot.press("r")
            await until(lambda: homes.heinzel_id(1) in home.table.items)
            assert not empty.display and "New" in key_bar_text(app)
    finally:
        await client.close()
