"""issue 14 item 6: every key is in F1 and in the palette, on every screen; the keymap is
overridable on any screen and a bad override is one coded notice. Pilot over real kernels.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from textual.binding import Binding
from textual.command import CommandList
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Static

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_tui import commands, keymap, settings
from hz_tui.app import CockpitApp
from hz_tui.screens.choose import ChooseScreen
from hz_tui.screens.contract import ContractScreen
from hz_tui.screens.conversation import ConversationScreen
from hz_tui.screens.daemon import DaemonScreen
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.screens.help import HelpScreen
from hz_tui.screens.home import HomeScreen
from hz_tui.screens.logs import LogScreen
from hz_tui.screens.notices import NoticesScreen
from hz_tui.screens.review import ReviewScreen
from hz_tui.screens.transcript import TranscriptScreen
from hz_tui.widgets.key_bar import KeyBar
from tests.tui import homes, worlds
from tests.tui.test_cockpit import SIZE, open_page, text_of, until

NOW = "2026-12-01T09:00:00+00:00"
THREE = ("notes-digest", "team-digest", "ops-digest")


def help_lines(app: CockpitApp) -> list[str]:
    return text_of(app.screen.query_one("#keys")).splitlines()  # type: ignore[arg-type]


def help_line_of(app: CockpitApp, binding_id: str) -> str:
    """The F1 line of one binding: keys, what it does, its id (the last word)."""
    return next(line for line in help_lines(app) if line.split()[-1:] == [binding_id])


def screen_binding_ids(screen: Screen[object]) -> set[str]:
    """Every binding id the screen and its widgets hold, and the app's (they work there)."""
    held = {b.id for b in keymap.APP if b.id}
    for node in [screen, *screen.query("*")]:
        held |= {b.id for b in getattr(node, "BINDINGS", []) if isinstance(b, Binding) and b.id}
    return held


def hidden_binding_ids(screen: Screen[object]) -> set[str]:
    """The binding ids the screen or its widgets hide now (``check_action`` is False)."""
    return {
        b.id
        for node in [screen, *screen.query("*")]
        for b in getattr(node, "BINDINGS", [])
        if isinstance(b, Binding) and b.id and commands.hidden(node, b)
    }


async def settle(pilot: Pilot[int]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def open_contract(pilot: Pilot[int]) -> None:
    await open_page(pilot, homes.heinzel_id(1))
    await pilot.press("v")


async def open_transcript(pilot: Pilot[int]) -> None:
    pilot.app.push_screen(TranscriptScreen(homes.heinzel_id(1)))


async def open_conversation(pilot: Pilot[int]) -> None:
    pilot.app.push_screen(ConversationScreen(homes.heinzel_id(1)))


async def nothing(pilot: Pilot[int]) -> None:
    return None


async def heinzel_page(pilot: Pilot[int]) -> None:
    await open_page(pilot, homes.heinzel_id(1))


async def f1(pilot: Pilot[int]) -> None:
    await pilot.press("f1")


async def f2(pilot: Pilot[int]) -> None:
    await pilot.press("f2")


async def f4(pilot: Pilot[int]) -> None:
    await pilot.press("f4")


async def f5(pilot: Pilot[int]) -> None:
    await pilot.press("f5")


async def logs(pilot: Pilot[int]) -> None:
    pilot.app.action_logs()  # type: ignore[attr-defined]


SCREENS: list[tuple[type[Screen[object]], Callable[[Pilot[int]], Awaitable[None]]]] = [
    (HomeScreen, nothing),
    (HeinzelScreen, heinzel_page),
    (ContractScreen, open_contract),
    (TranscriptScreen, open_transcript),
    (ConversationScreen, open_conversation),
    (ReviewScreen, f4),
    (DaemonScreen, f2),
    (LogScreen, logs),
    (NoticesScreen, f5),
    (HelpScreen, f1),
]


@contextlib.asynccontextmanager
async def on_screen(
    home: Home, client: LocalClient, kind: type[Screen[object]], go: Any
) -> AsyncIterator[tuple[CockpitApp, Pilot[None], Screen[object]]]:
    """A cockpit brought to a screen of ``kind`` by ``go``, settled there."""
    app = CockpitApp(home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await go(pilot)
        await until(lambda: isinstance(app.screen, kind))
        await settle(pilot)
        yield app, pilot, app.screen


@pytest.mark.parametrize(("kind", "go"), SCREENS, ids=[kind.__name__ for kind, _ in SCREENS])
async def test_issue14_item6_every_action_of_a_screen_is_in_its_palette_and_in_f1(
    cockpit_home: Home, client: LocalClient, kind: type[Screen[object]], go
) -> None:
    """On every screen, each key that does something (all but moving and going back) is a
    command of the palette, which names its key; F1 lists every binding id, there too."""
    async with on_screen(cockpit_home, client, kind, go) as (app, pilot, screen):
        listed = commands.palette_commands(app, screen)
        offered = {c.binding for c in listed if c.binding}
        actions = {
            binding_id
            for binding_id in screen_binding_ids(screen)
            if keymap.MEANING_OF[binding_id] not in (keymap.MOVE, keymap.BACK)
        }
        off = hidden_binding_ids(screen)  # off the key bar here now (the embedded kernel's restart)
        assert sorted(actions - offered - commands.KEY_ONLY - off) == []
        for command in listed:
            if command.binding:
                assert command.help.endswith(keymap.shown_keys(command.binding, {}))
        if kind is not HelpScreen:
            await pilot.press("f1")
            await until(lambda: isinstance(app.screen, HelpScreen))
        shown = " ".join(help_lines(app))
        assert sorted(i for i in keymap.binding_ids() if i not in shown) == []


@pytest.mark.parametrize(("kind", "go"), SCREENS, ids=[kind.__name__ for kind, _ in SCREENS])
async def test_a_screens_palette_offers_only_what_works_there_each_with_its_own_description(
    cockpit_home: Home, client: LocalClient, kind: type[Screen[object]], go
) -> None:
    """Attack pass (s5): a palette entry names a key only if that key works on the screen
    (the home listed the kernel page's l and the heinzel page's K); "Stop the running turn…"
    is offered on a heinzel's page only; no two entries for different keys share a
    description (Turns: Transcript showed the composer's)."""
    async with on_screen(cockpit_home, client, kind, go) as (app, _, screen):
        listed = commands.palette_commands(app, screen)
        held = screen_binding_ids(screen)
        assert [c.title for c in listed if c.binding and c.binding not in held] == []
        titles = {c.title for c in listed}
        assert ("Stop the running turn…" in titles) is (kind is HeinzelScreen)
        assert "Daemon log" in titles
        about: dict[str, str] = {}
        for command in listed:
            if command.binding:
                text = command.help.rpartition(" · ")[0]
                assert about.setdefault(text, command.binding) == command.binding, text


async def test_issue14_item6_the_palette_runs_a_page_key_the_key_bar_does_not_show(
    cockpit_home: Home, client: LocalClient
) -> None:
    """Dismissing a lesson (D, not on the key bar) is found in the palette by its words and
    asks which lesson, as the key does."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await open_page(pilot, homes.heinzel_id(1))
        await pilot.press("ctrl+p", *"dismiss lesson")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, ChooseScreen))
        assert "Dismiss which lesson?" in str(app.screen.heading)  # type: ignore[attr-defined]


@pytest.fixture
async def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[worlds.World]:
    monkeypatch.setenv("HZ_NOW", NOW)
    yield await worlds.build(tmp_path, THREE)


async def review_desk(
    app: CockpitApp, pilot: Pilot[int], drafts: int, key: str = "f4"
) -> ReviewScreen:
    await app.loaded.wait()
    await pilot.pause(0.2)
    await pilot.press(key)
    await until(lambda: isinstance(app.screen, ReviewScreen))
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    await until(lambda: screen.queue.row_count == drafts and screen.review is not None)
    return screen


async def test_issue14_item6_a_keymap_override_rebinds_a_review_desk_key_and_f1_shows_it(
    desk: worlds.World,
) -> None:
    """``cockpit.json`` ``{"keymap": {"review.approve": "Y"}}``: on the review desk Y
    approves and a no longer does; F1 lists Y for review.approve."""
    settings.save_prefs(desk.home, settings.CockpitPrefs(keymap={"review.approve": "Y"}))
    client = LocalClient(await Kernel.open(desk.home, long_lived=True))
    try:
        app = CockpitApp(desk.home, client)
        async with app.run_test(size=SIZE) as pilot:
            screen = await review_desk(app, pilot, 3)
            await pilot.press("a")
            await pilot.pause(0.5)
            assert screen.queue.row_count == 3
            await pilot.press("Y")
            await until(lambda: screen.queue.row_count == 2)
            listed = await client.call(ops.DRAFTS, ops.Empty())
            assert len(listed.items) == 2
            assert "Y Approve" in screen.query_one(KeyBar).render().plain
            await pilot.press("f1")
            await until(lambda: isinstance(app.screen, HelpScreen))
            assert help_line_of(app, "review.approve").split()[0] == "Y"
            assert not [n for n in app.notices.history if n.severity != "information"]
    finally:
        await client.close()


async def test_issue14_item6_a_bad_keymap_override_is_one_coded_notice_not_a_traceback(
    desk: worlds.World,
) -> None:
    """An unknown id and an override that would put two desk bindings on one key each give
    one notice line with its code; the cockpit starts and x still rejects on the desk. The
    old id ``home.review`` rebinds F4's review (``app.review``) to V."""
    wanted = {"review.nonsense": "z", "review.approve": "x", "home.review": "V"}
    settings.save_prefs(desk.home, settings.CockpitPrefs(keymap=wanted))
    client = LocalClient(await Kernel.open(desk.home, long_lived=True))
    try:
        app = CockpitApp(desk.home, client)
        async with app.run_test(size=SIZE) as pilot:
            screen = await review_desk(app, pilot, 3, key="V")
            notices = [n.message for n in app.notices.history]
            assert [n[:6] for n in notices] == ["HZU230", "HZU232"]
            assert all("\n" not in n and "Traceback" not in n for n in notices)
            await pilot.press("x")
            await until(lambda: screen.queue.row_count == 2 and len(screen.undoable) == 1)
            await pilot.press("u")
            await until(lambda: screen.queue.row_count == 3)
            await pilot.press("escape")
            await until(lambda: isinstance(app.screen, HomeScreen))
            await pilot.press("f4")
            await pilot.pause(0.2)
            assert isinstance(app.screen, HomeScreen)
    finally:
        await client.close()


async def test_a_non_string_keymap_entry_is_skipped_with_one_coded_line_the_rest_kept(
    cockpit_home: Home, client: LocalClient
) -> None:
    """Attack pass (s5): ``{"keymap": {"home.filter": "f", "review.approve": 5}}`` with a
    theme and the bell: the bad entry is one HZU236 line naming it; the theme, the bell and
    the good override (f filters the home) are kept. It dropped every preference."""
    wanted = {"home.filter": "f", "review.approve": 5}
    prefs = {"theme": "hz-light", "bell": True, "keymap": wanted}
    settings.prefs_path(cockpit_home).write_bytes(orjson.dumps(prefs))
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        notices = [n.message for n in app.notices.history]
        assert len(notices) == 1 and notices[0].startswith("HZU236"), notices
        assert "'review.approve'" in notices[0] and "\n" not in notices[0]
        assert app.theme == "hz-light" and app.bell_on
        await pilot.press("f")
        await until(lambda: app.get_home().filter_bar.has_focus)


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("bell", "yes", '"yes" is not true or false'),
        ("bell", 1, "1 is not true or false"),
        ("theme", 7, "7 is not one of hz-dark"),
        ("theme", "solarised", '"solarised" is not one of hz-dark'),
        ("keymap", ["f"], '["f"] is not an object of binding ids to keys'),
    ],
)
def test_s6_item3_a_wrong_value_is_one_line_naming_file_and_key_the_rest_kept(
    home: Home, key: str, value: object, shown: str
) -> None:
    """s6 item 3: ``"bell": "yes"`` (read as true before, silently) and every other wrong value
    is one HZU237 line naming the file, the key and the value; the other preferences apply."""
    good: dict[str, object] = {
        "theme": "hz-light",
        "bell": False,
        "keymap": {"home.filter": "f"},
    }
    settings.prefs_path(home).write_bytes(orjson.dumps(good | {key: value}))
    prefs, problems = settings.load_prefs(home)
    assert prefs == settings.CockpitPrefs.model_validate(
        {name: kept for name, kept in good.items() if name != key}
    )
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"HZU237: {settings.prefs_path(home)}: {key}: {shown}")
    assert "\n" not in problems[0]


def test_s6_item3_a_key_that_is_no_preference_is_named_and_ignored(home: Home) -> None:
    """s6 item 3: a typo (``"bel"``) is not silently dropped: one HZU243 line names it."""
    settings.prefs_path(home).write_bytes(orjson.dumps({"bel": True, "theme": "hz-light"}))
    prefs, problems = settings.load_prefs(home)
    assert prefs == settings.CockpitPrefs(theme="hz-light")
    assert problems == [
        f"HZU243: {settings.prefs_path(home)}: bel: not a preference (theme, keymap, bell); ignored"
    ]


async def test_s6_item3_the_cockpit_shows_a_wrong_bell_and_applies_the_rest(
    cockpit_home: Home, client: LocalClient
) -> None:
    """s6 item 3: started with ``"bell": "yes"``, the cockpit shows the HZU237 notice naming
    cockpit.json and bell, keeps the bell off (hz.toml's default) and applies the theme."""
    prefs = {"theme": "hz-light", "bell": "yes", "keymap": {"home.filter": "f"}}
    settings.prefs_path(cockpit_home).write_bytes(orjson.dumps(prefs))
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        notices = [n.message for n in app.notices.history]
        assert len(notices) == 1 and notices[0].startswith("HZU237"), notices
        assert "cockpit.json: bell:" in notices[0] and '"yes"' in notices[0]
        assert app.theme == "hz-light" and not app.bell_on
        await pilot.press("f")
        await until(lambda: app.get_home().filter_bar.has_focus)


def test_a_bad_preference_takes_its_default_and_keeps_the_others(home: Home) -> None:
    """A theme that is not a string costs only the theme (HZU237, naming it); a file that
    is not a JSON object gives the defaults with HZU238."""
    path = settings.prefs_path(home)
    path.write_bytes(orjson.dumps({"theme": 7, "bell": True, "keymap": {"home.filter": "f"}}))
    prefs, problems = settings.load_prefs(home)
    assert prefs == settings.CockpitPrefs(bell=True, keymap={"home.filter": "f"})
    assert len(problems) == 1 and problems[0].startswith("HZU237") and "theme" in problems[0]
    path.write_bytes(b"[1, 2]")
    prefs, problems = settings.load_prefs(home)
    assert prefs == settings.CockpitPrefs()
    assert len(problems) == 1 and problems[0].startswith("HZU238")


def test_attack_saving_a_preference_never_writes_over_a_file_that_did_not_read(
    home: Home,
) -> None:
    """A trailing comma makes the file no JSON: HZU238 says where; the next save (F3's theme)
    keeps the user's file aside, byte for byte, says where (HZU239), and writes a new one."""
    path = settings.prefs_path(home)
    typo = b'{"keymap": {"home.filter": "f", "review.approve": "Y"}, "bell": true,}'
    path.write_bytes(typo)
    prefs, problems = settings.load_prefs(home)
    assert len(problems) == 1 and problems[0].startswith("HZU238") and "column" in problems[0]
    note = settings.save_prefs(home, prefs.model_copy(update={"theme": "hz-light"}))
    assert note is not None and note.startswith("HZU239")
    kept = [p for p in path.parent.iterdir() if p.name.startswith("cockpit.json.bad-")]
    assert len(kept) == 1 and kept[0].read_bytes() == typo and kept[0].name in note
    assert settings.load_prefs(home) == (settings.CockpitPrefs(theme="hz-light"), [])
    assert settings.save_prefs(home, settings.CockpitPrefs(theme="hz-dark")) is None
    path.write_bytes(b"x" * settings.PREFS_MAX_BYTES)
    assert "larger than" in str(settings.load_prefs(home)[1])


async def test_at_80_columns_the_desk_hides_its_queue_n_walks_it_and_slash_shows_it(
    desk: worlds.World,
) -> None:
    """s8 attack pass: at 80×24 the queue kept 24 columns of names beside a cramped diff.
    Below 100 columns the diff takes the whole width; ``n`` still walks the drafts, and the
    filter shows the list while it is open."""
    client = LocalClient(await Kernel.open(desk.home, long_lived=True))
    try:
        app = CockpitApp(desk.home, client)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await review_desk(app, pilot, 3)
            column = screen.query_one("#queue-column")
            await until(lambda: not column.display)
            assert screen.pane.has_focus
            assert screen.pane.size.width >= 78
            first = screen.queue.cursor_key()
            await pilot.press("n")
            await until(lambda: screen.queue.cursor_key() != first)
            assert "draft 2 of 3" in text_of(screen.query_one("#review-status", Static))
            await pilot.press("slash")
            await until(lambda: column.display)
            await pilot.press("escape")
            await until(lambda: not column.display and screen.pane.has_focus)
    finally:
        await client.close()


async def test_paging_the_palette_on_a_terminal_four_rows_high_is_no_traceback(
    desk: worlds.World,
) -> None:
    """Attack pass: key mashing at 20×8 ended the cockpit with a KeyError from the palette's
    list, paged while laid out zero rows high (here at 20×4). The key is dropped instead."""
    client = LocalClient(await Kernel.open(desk.home, long_lived=True))
    try:
        app = CockpitApp(desk.home, client)
        async with app.run_test(size=(20, 4)) as pilot:
            await app.loaded.wait()
            await pilot.press("ctrl+p")
            await until(lambda: isinstance(app.screen, commands.Palette))
            await pilot.press("a")
            listed = app.screen.query_one(CommandList)
            await until(lambda: listed.option_count > 0)
            assert listed.size.height == 0
            await pilot.press("down", "pageup", "pagedown", "pageup")
            await pilot.pause()
            assert isinstance(app.screen, commands.Palette) and app.is_running
    finally:
        await client.close()
