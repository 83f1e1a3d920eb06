"""The cockpit application: one ``KernelClient``, the home's spines tailed for live rows.

``await run(home, client, beside=...)`` is the entry the ``hz`` command
calls. The app owns the rows every screen shows (``rows``), announces
changes on the ``rows_changed`` signal and raw spine lines on
``spines_moved``, and keeps two workers: the spine watcher and the
refresher that turns moved spines into fresh rows (``hz_tui.live``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, work
from textual.app import App
from textual.command import Provider
from textual.notifications import Notify, SeverityLevel
from textual.screen import Screen
from textual.signal import Signal
from textual.timer import Timer

from hz_kernel import operations as ops
from hz_kernel.client import KernelClient
from hz_kernel.clock import now_utc
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.overview import HeinzelSummary
from hz_tui import (
    actions,
    key_overrides,
    keymap,
    monochrome,
    notices,
    paste,
    rows,
    settings,
    themes,
    ticking,
)
from hz_tui.link import Link, NotConnected
from hz_tui.live import RowRefresher
from hz_tui.messages import OpenHeinzel, RowsUpdate, SpinesMoved
from hz_tui.screens.home import HomeScreen
from hz_tui.sources import live_source
from hz_tui.toast_place import keep_toasts_clear
from hz_tui.watcher import SpineBatch

if TYPE_CHECKING:
    from hz_tui.held_rejects import Sent

#: Work that runs beside the cockpit for its lifetime (the embedded tick loop); it gets an
#: event that is set when the cockpit closes.
Beside = Callable[[asyncio.Event], Awaitable[None]]
#: How long after the first rows the client loads what it put off (an embedded kernel): the
#: first frame is on screen by then, and the loading does not compete with drawing it.
WARM_AFTER_S = 0.3
#: How often a running cockpit looks for rejections a killed cockpit left held.
LEFT_BEHIND_EVERY_S = 30.0
#: How long the first frame waits for the first rows: a listing from the index takes
#: milliseconds, and a frame drawn once with the rows is cheaper than an empty one and a redraw;
#: a slower kernel (a remote daemon) gets the frame first.
FIRST_ROWS_WAIT_S = 0.25
#: How long work beside the cockpit may take to wind down after the cockpit closed.
BESIDE_GRACE_S = 3.0

#: How long a problem with the cockpit's own settings (``cockpit.json``) stays on screen.
SETTINGS_NOTICE_S = 30.0
#: The header while the cockpit waits for the daemon's turns to end before it quits.
QUITTING = "quits when the turns end"
#: How often a cockpit waiting to quit looks whether the daemon's turns have ended.
QUIT_POLL_S = 0.5
#: How long the link may be lost before the cockpit says how to start a daemon.
GONE_AFTER_S = 15.0
#: The header's icon and clock space, both sides of its centred title (Textual's ``Header``).
HEADER_EDGES = 20


def _cockpit_commands() -> type[Provider]:
    """The palette's provider, loaded when the palette first opens (not before the first
    frame)."""
    from hz_tui.commands import CockpitCommands

    return CockpitCommands


class CockpitApp(App[int]):
    """The hz cockpit."""

    TITLE = "hz"
    # The home's own file too: read with the app's, it is parsed once at start; read when
    # the home is pushed, Textual would parse every rule again just before the first frame.
    CSS_PATH: ClassVar[list[str | PurePath]] = ["app.tcss", "screens/home.tcss"]
    BINDINGS = keymap.APP
    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {_cockpit_commands}

    def __init__(
        self,
        home: Home,
        client: KernelClient,
        *,
        live: bool = True,
        daemon_ends_with_it: bool = False,
    ) -> None:
        # Textual picks its NO_COLOR filter here, from the theme of the moment: say the colours
        # are the terminal's, so it strips them (NoColor) rather than greying them (black).
        super().__init__(ansi_color=themes.no_color() or None)
        monochrome.install()
        paste.install()
        self.home = home
        self.link = Link(
            home, client, owner=self, catch_up=partial(self.load_all, quiet_if_lost=True)
        )
        self.live = live
        self.started_at = now_utc()
        self.rows: dict[str, HeinzelSummary] = {}
        self.listed = False
        """Whether ``rows`` was filled once (an empty dict before that is not an empty home)."""
        self.list_error: str | None = None
        """Why the last listing failed (a damaged index, say): the home says it, not "empty"."""
        self.rows_changed: Signal[RowsUpdate] = Signal(self, "rows-changed")
        self.spines_moved: Signal[SpineBatch] = Signal(self, "spines-moved")
        self.ticker = ticking.Ticker(self)
        """The one timer every relative time on screen is redrawn by."""
        self.notices = notices.NoticeBoard(self)
        self.names: dict[str, str] = {}
        """Names learned from spine lines, for toasts about heinzels not in ``rows`` yet."""
        self.loaded = asyncio.Event()
        self.warmed = asyncio.Event()
        """Set once the client loaded what it put off: asks that open a deferred kernel wait."""
        self.held_at_start: set[str] = set()
        self.unsent_rejects: set[str] = set()
        """Rejections a closed review desk could not send: sent when the link is back."""
        self.unanswered: dict[tuple[str, str], tuple[ops.Operation[Any, Any], ops.Request]] = {}
        """Actions with a request id whose daemon was lost before it answered, by heinzel and
        action: pressed again, the same request goes out, so the kernel does it once."""
        self.hand_off = False
        """Set when the user quit handing the embedded kernel's turns to the daemon."""
        self.cut_turns = False
        """Set when the user quit cutting the embedded kernel's running turns (said after)."""
        self.daemon_ends_with_it = daemon_ends_with_it
        """The daemon stops when the cockpit closes (``hz demo``): quitting asks about its turns."""
        self.cut_names: list[str] = []
        """Such a daemon's heinzels whose turns quitting cut (said after)."""
        self._quit_when_idle: Timer | None = None
        """While set, the cockpit quits once no turn runs (the user chose to wait for them)."""
        self._gone_timer: Timer | None = None
        """Set while the link is lost: when it fires, the cockpit says how to start a daemon."""
        self._gone_said: str | None = None
        """The toast saying no daemon answers, while it may show (withdrawn once attached)."""
        self.watcher = live_source(home, self.link)
        self.refresher = RowRefresher(self.link)
        prefs, problems = settings.load_prefs(home)
        self.prefs = prefs
        self.prefs_problems = problems
        self.keymap_overrides, self.keymap_problems = key_overrides.resolve(prefs.keymap)
        for theme in themes.load_themes():
            self.register_theme(theme)
        self.low_colours = themes.low_colour(self.console.color_system)
        self.theme = themes.choose_theme(
            prefs.theme,
            home.settings.cockpit.theme,
            set(themes.THEME_NAMES),
            low_colours=self.low_colours,
        )

    @property
    def client(self) -> Link:
        """What every screen asks the kernel through: the link, which knows if it is there."""
        return self.link

    # -- start and live rows -----------------------------------------------------------

    async def on_mount(self) -> None:
        from hz_tui.held_rejects import HeldRejects

        # Rejections a cockpit that ended left held (another running cockpit's are its own).
        self.held_at_start = HeldRejects(self.home).claim_left_behind()
        self.show_where()
        self.link.changed.subscribe(self, self.on_link_changed, immediate=True)
        self.screen_change_signal.subscribe(self, self.on_screen_change)
        self.set_keymap(self.keymap_overrides)
        self.ticker.start()
        # The first frame waits (a little) for the rows, so it is drawn once, with them.
        listing = asyncio.ensure_future(self.first_rows())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(listing), FIRST_ROWS_WAIT_S)
        self.push_screen(HomeScreen())
        # Said over the first frame, and left long enough to be read there (F5 keeps them).
        for problem in [*self.prefs_problems, *self.keymap_problems]:
            if problem:
                self.notify(problem, severity="warning", timeout=SETTINGS_NOTICE_S)
        self.start(listing)
        self.keep_linked()

    @work(exclusive=True, group="link")
    async def keep_linked(self) -> None:
        await self.link.run()

    def on_link_changed(self, link: Link) -> None:
        self.show_where()
        if link.attached and (self.unsent_rejects or self.warmed.is_set()):
            self.send_unsent_rejects()
        if self._gone_timer is not None:
            self._gone_timer.stop()
            self._gone_timer = None
        if not link.attached:
            self._gone_timer = self.set_timer(GONE_AFTER_S, self.say_daemon_gone)
        elif self._gone_said is not None:  # attached again: what it said to do is done
            self.notices.withdraw(self._gone_said, severity="warning")
            self._gone_said = None

    def say_daemon_gone(self) -> None:
        """Still no daemon after a while: say how to start one (attack pass: after a SIGKILL
        the header said "reconnecting…" for good, and nothing said what to do)."""
        self._gone_timer = None
        if self.link.attached:
            return
        if self.link.remote:
            address = getattr(self.link.current, "url", "its URL")
            said = (
                f"No daemon answers at {address} with the token file's token. A restarted "
                "daemon has a new token: copy it into the token file (read again at every "
                "try); it keeps its port only with [daemon] port set, else reconnect to the "
                "new one (hz --connect). One that stopped: hz daemon start on its machine. "
                "See docs/cockpit.md, remote attach."
            )
        else:
            said = (
                "No daemon answers for this home: F2 then Ctrl+R starts one here, or run "
                "hz daemon start; the cockpit attaches to it by itself."
            )
        self._gone_said = said
        self.notify(said, severity="warning", timeout=30)

    @work(group="held")
    async def send_unsent_rejects(self) -> None:
        """The link is back: send what this cockpit's desks could not, and what a cockpit
        that quit while the daemon was away left behind (claimed as at the start)."""
        from hz_tui.held_rejects import HeldRejects

        held = HeldRejects(self.home)
        keys, self.unsent_rejects = self.unsent_rejects, set()
        try:
            self.said_sent(await held.send_mine(self.client, keys))
            self.said_sent(await held.send_left_behind(self.client, held.claim_left_behind()))
        except HzError as exc:
            self.notify(exc.one_line(), severity="error", timeout=10)

    def said_sent(self, sent: Iterable[Sent]) -> None:
        """Say how each held rejection went; one the daemon was away for is tried again when
        the link is back."""
        for one in sent:
            if one.outcome == "unreachable":
                self.unsent_rejects.add(one.key)
            self.notify(one.line, severity=one.severity, timeout=10)

    def look_for_left_behind(self) -> None:
        """A cockpit may end (killed) while this one runs, holding a rejection: now and then,
        while linked, claim and send what such a cockpit left (only when the file exists)."""
        from hz_tui.held_rejects import HeldRejects

        if self.link.attached and self.warmed.is_set() and HeldRejects(self.home).path.exists():
            self.send_unsent_rejects()

    def on_screen_change(self, screen: Screen[object]) -> None:
        self.show_where()
        keep_toasts_clear(self, screen)

    def on_resize(self, event: events.Resize) -> None:
        self.show_where(event.size.width)

    def retitle(self, screen: Screen[Any], title: str) -> None:
        """Give ``screen`` its title once its data came, and fit the header's suffix to it."""
        screen.title = title
        if screen is self.screen:
            self.show_where()

    def show_where(self, width: int | None = None) -> None:
        """The header's suffix: the longest form of ``Link.where`` that fits beside the page's
        title (``Link.forms``), so "reconnecting…" and the kind of kernel never fall off."""
        title = self.screen.title if self.screen_stack and self.screen.title else self.title
        room = (self.size.width if width is None else width) - len(title) - len(" — ")
        forms = self.link.forms
        if self._quit_when_idle is not None:  # said until it happens: the toast goes before
            forms = [f"{QUITTING} · {form}" for form in forms] + [QUITTING]
        fitting = (form for form in forms if len(form) + HEADER_EDGES <= room)
        self.sub_title = next(fitting, forms[-1])

    async def first_rows(self) -> None:
        """Tail from the spines' current ends, then list: nothing appended between is missed."""
        try:
            await self.watcher.prime()
        except HzError as exc:
            self.notify(exc.one_line(), severity="error", timeout=10)
        await self.load_all()

    @work(exclusive=True, group="start")
    async def start(self, listing: Awaitable[None]) -> None:
        """Once the first rows are listed and drawn, follow the spines."""
        await listing
        if not self.loaded.is_set():
            self.call_after_refresh(self.first_frame_drawn)
        if self.live:
            self.watch_spines()
            self.refresh_rows()

    def first_frame_drawn(self) -> None:
        """The first rows are on screen: say so (``loaded``), then settle in for the long run.

        Called once the home has drawn its first rows: after the home's first frame when
        they were there as it opened, or after the frame that follows their arrival.
        """
        if self.loaded.is_set():
            return
        self.loaded.set()
        # What exists now (modules, widgets, the first rows) lives as long as the cockpit;
        # keeping it out of the collector's full passes keeps those passes from pausing the
        # screen for ~100 ms while the live feed runs. (``hz`` starts with the collector off.)
        gc.freeze()
        gc.enable()
        self.set_timer(WARM_AFTER_S, self.warm_client)
        if self.live:
            self.set_interval(LEFT_BEHIND_EVERY_S, self.look_for_left_behind)

    @work(exclusive=True, group="warm")
    async def warm_client(self) -> None:
        """After the first frame, load what the client put off (an embedded kernel opens)."""
        from hz_tui.held_rejects import HeldRejects

        try:
            await self.client.warm()
            held = HeldRejects(self.home)
            # Rejections held for undo when the last cockpit ended.
            self.said_sent(await held.send_left_behind(self.client, self.held_at_start))
        except HzError as exc:
            self.notify(exc.one_line(), severity="error", timeout=10)
        finally:
            self.warmed.set()

    async def load_all(self, *, quiet_if_lost: bool = False) -> None:
        """List every heinzel; a failure is a toast (a key the user pressed says why it did
        nothing), except a lost link when ``quiet_if_lost``: the header says so, and the link
        lists everything again once it is back."""
        try:
            listed = await self.client.call(ops.LIST, ops.ListRequest())
        except HzError as exc:
            if not (quiet_if_lost and isinstance(exc, NotConnected)):
                self.notify(exc.one_line(), severity="error", timeout=10)
            if not isinstance(exc, NotConnected):  # a lost link is the header's to say
                self.list_error = exc.one_line()
                self.rows_changed.publish(RowsUpdate(rows=list(self.rows.values()), full=True))
            return
        self.list_error = None
        for warning in listed.warnings:
            self.notify(warning, severity="warning")
        self.publish(RowsUpdate(rows=listed.items, full=True))

    def publish(self, update: RowsUpdate) -> None:
        """Fold ``update`` in and pass it on; a row older than the one held is not shown.

        A full listing may be read before a change the feed has already
        delivered (a reload after a reconnect, while the user acts): the
        newer row, by its spine position, stays.
        """
        update = update.model_copy(update={"rows": [rows.drawable(row) for row in update.rows]})
        held = self.rows
        newer = {
            row.id: held[row.id]
            for row in update.rows
            if row.id in held and held[row.id].seq > row.seq
        }
        if newer:
            fresh = [newer.get(row.id, row) for row in update.rows]
            update = update.model_copy(update={"rows": fresh})
        if update.full:
            self.listed = True
            self.rows = {row.id: row for row in update.rows}
        else:
            for heinzel_id in update.gone:
                self.rows.pop(heinzel_id, None)
            self.rows.update({row.id: row for row in update.rows})
        self.rows_changed.publish(update)

    @work(exclusive=True, group="watch")
    async def watch_spines(self) -> None:
        try:
            await self.watcher.run(lambda batch: self.post_message(SpinesMoved(batch)))
        except OSError as exc:
            self.notify(f"live updates are off: {exc.strerror}", severity="warning")

    @work(exclusive=True, group="refresh")
    async def refresh_rows(self) -> None:
        await self.refresher.run(self.publish, self.report_error)

    def on_spines_moved(self, message: SpinesMoved) -> None:
        if message.batch.reload:
            self.reload()
        self.refresher.note(message.batch)
        self.spines_moved.publish(message.batch)
        self.names.update(notices.names_seen(message.batch))
        names = self.names | {heinzel_id: row.name for heinzel_id, row in self.rows.items()}
        toasts = notices.toasts_for(message.batch, names)
        for toast in toasts:
            self.notify(toast.message, severity=toast.severity, timeout=toast.timeout)
        if toasts and self.bell_on:
            self.bell()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notice goes into the history; a repeat joins its toast (``NoticeBoard``)."""
        toast = self.notices.raise_notice(
            message,
            title=title,
            severity=severity,
            timeout=self.NOTIFICATION_TIMEOUT if timeout is None else timeout,
            markup=markup,
            now=now_utc(),
        )
        self.post_message(Notify(toast))

    @property
    def bell_on(self) -> bool:
        """Ring with toasts: ``bell`` in cockpit.json, else ``[cockpit] bell`` in hz.toml."""
        if self.prefs.bell is not None:
            return self.prefs.bell
        return self.home.settings.cockpit.bell

    def toggle_bell(self) -> None:
        self.prefs = self.prefs.model_copy(update={"bell": not self.bell_on})
        self.notify(f"Bell {'on' if self.bell_on else 'off'} for new drafts and failed turns.")
        self.save_prefs()

    def report_error(self, error: HzError) -> None:
        if not isinstance(error, NotConnected):  # the header already says so
            self.notify(error.one_line(), severity="error", timeout=10)

    @work(exclusive=True, group="reload")
    async def reload(self) -> None:
        await self.load_all()

    @work(exclusive=True, group="restart")
    async def restart_daemon(self) -> None:
        """Restart the daemon behind the cockpit and carry on with a client of the new one.

        The restart drains first (running turns pause at a step boundary and
        the new daemon resumes them), and goes through the service manager
        when one runs the daemon.

        If the daemon does not come back, the cockpit carries on with what
        ``connect`` finds (an embedded kernel when no daemon serves the home).
        """
        from hz_kernel import connect  # the HTTP stack: not worth loading before the first frame

        old = self.link.current
        if (refused := connect.restart_refusal(old)) is not None:
            self.notify(refused.one_line(), severity="error", timeout=10)
            return
        lost = not self.link.attached  # no daemon answers: the restart starts one
        self.notify(
            "Starting the daemon…"
            if lost
            else "Restarting the daemon once running turns reach a step boundary…"
        )
        try:
            fresh = await connect.restart_daemon(old, self.home)
        except HzError as exc:
            self.notify(exc.one_line(), severity="error", timeout=10)
            try:
                fresh = await connect.connect(self.home)
            except HzError as again:
                self.notify(again.one_line(), severity="error", timeout=10)
                return
            how = "adopted"
        else:
            self.notify(f"{'Started' if lost else 'Restarted'}: now talking to the {fresh.where}.")
            how = "restarted"
        await self.link.attach(fresh, how=how)
        await self.load_all(quiet_if_lost=True)

    def action_command_palette(self) -> None:
        """The palette, with its paging keys safe on a tiny terminal (``commands.Palette``)."""
        from hz_tui.commands import Palette

        if self.use_command_palette and not Palette.is_open(self):
            self.push_screen(Palette(id="--command-palette"))

    async def action_quit(self) -> None:
        """Quit; running turns that quitting would cut (an embedded kernel's, or those of a
        daemon that stops with the cockpit) ask first what becomes of them."""
        from hz_tui.screens.quit import QuitScreen

        if isinstance(self.screen, QuitScreen):
            return
        count = self.daemon_turns if self.daemon_ends_with_it else self.embedded_turns
        if not count():
            self.exit()
            return
        asking = QuitScreen(count, daemon_ends=self.daemon_ends_with_it)
        self.push_screen(asking, self.quit_chosen)

    def embedded_turns(self) -> int:
        from hz_kernel.connect import turns_to_cut

        return turns_to_cut(self.link.current)

    def daemon_turns(self) -> int:
        """Turns the daemon runs now, as the rows say (a heinzel awake runs one)."""
        return len(self.awake_names())

    def awake_names(self) -> list[str]:
        return sorted(row.name for row in self.rows.values() if row.state == "awake")

    def quit_chosen(self, choice: str | None) -> None:
        if self._quit_when_idle is not None:
            self._quit_when_idle.stop()
            self._quit_when_idle = None
            self.show_where()
        if choice == "wait":
            self.notify("Quitting when the running turns end; q asks again.", timeout=6)
            self._quit_when_idle = self.set_interval(QUIT_POLL_S, self._quit_if_idle)
            self.show_where()
            return
        if choice == "cut" and self.daemon_ends_with_it:
            self.cut_names = self.awake_names()
            self.exit()
            return
        if choice in ("cut", "daemon"):
            self.hand_off = choice == "daemon"
            self.cut_turns = choice == "cut"
            if self.hand_off:
                from hz_kernel.connect import drain

                drain(self.link.current)
            self.exit()

    # -- navigation --------------------------------------------------------------------
    # Pages other than the home are imported when first opened: loading them all at start
    # would cost the first frame about a tenth of its time.

    def _quit_if_idle(self) -> None:
        if not self.daemon_turns():
            self.exit()

    def on_open_heinzel(self, message: OpenHeinzel) -> None:
        self.open_heinzel(message.heinzel_id)

    def open_heinzel(self, heinzel_id: str) -> None:
        from hz_tui.screens.daemon import DaemonScreen
        from hz_tui.screens.heinzel import HeinzelScreen

        if isinstance(self.screen, HeinzelScreen | DaemonScreen):
            self.pop_screen()
        self.push_screen(HeinzelScreen(heinzel_id))

    def home_screen(self) -> HomeScreen:
        """Close every page above the home screen and return it."""
        while not isinstance(self.screen, HomeScreen) and len(self.screen_stack) > 2:
            self.pop_screen()
        return self.get_home()

    def get_home(self) -> HomeScreen:
        return next(s for s in self.screen_stack if isinstance(s, HomeScreen))

    def action_home(self) -> None:
        self.home_screen()

    def action_filter(self) -> None:
        self.home_screen().action_filter()

    def sort_home(self, column: str) -> None:
        self.home_screen().sort_by(column, reverse=False)

    def sort_next(self) -> None:
        self.home_screen().table.action_sort_next()

    def reverse_home(self) -> None:
        table = self.home_screen().table
        table.sort_by(table.sort_column, reverse=not table.sort_reverse)

    def toggle_preview(self) -> None:
        self.home_screen().action_toggle_preview()

    def action_daemon(self) -> None:
        from hz_tui.screens.daemon import DaemonScreen
        from hz_tui.screens.heinzel import HeinzelScreen

        if not isinstance(self.screen, DaemonScreen):
            if isinstance(self.screen, HeinzelScreen):
                self.pop_screen()
            self.push_screen(DaemonScreen())

    def action_logs(self) -> None:
        from hz_tui.screens.logs import LogScreen

        if self.client.remote:
            self.notify(
                HzError(
                    "HZU128",
                    "the daemon's log is on its machine: run hz daemon logs -f there",
                ).one_line(),
                severity="warning",
            )
            return
        if not isinstance(self.screen, LogScreen):
            self.push_screen(LogScreen(self.home.root))

    def action_help(self) -> None:
        from hz_tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_notices(self) -> None:
        from hz_tui.screens.notices import NoticesScreen

        if not isinstance(self.screen, NoticesScreen):
            self.push_screen(NoticesScreen())

    def action_graph(self) -> None:
        """The graph page; from a heinzel's page, narrowed to that heinzel."""
        from hz_tui.screens.graph import GraphScreen
        from hz_tui.screens.heinzel import HeinzelScreen

        if isinstance(self.screen, GraphScreen):
            return
        focus = self.screen.heinzel_id if isinstance(self.screen, HeinzelScreen) else None
        self.push_screen(GraphScreen(focus))

    def action_review(self) -> None:
        from hz_tui.screens.help import HelpScreen
        from hz_tui.screens.review import ReviewScreen

        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
        if not isinstance(self.screen, ReviewScreen):
            self.push_screen(ReviewScreen())

    # -- actions on one heinzel ----------------------------------------------------------

    def selected_heinzel(self) -> str | None:
        """The heinzel an action applies to: the open page's, else the table's highlighted row."""
        from hz_tui.screens.heinzel import HeinzelScreen

        if isinstance(self.screen, HeinzelScreen):
            return self.screen.heinzel_id
        return self.get_home().table.cursor_key()

    def act_on_selected(self, action: str) -> None:
        heinzel_id = self.selected_heinzel()
        if heinzel_id is None:
            self.notify("No heinzel is selected.", severity="warning")
        else:
            self.act(heinzel_id, action)

    @work(group="act")
    async def act(self, heinzel_id: str, action: str) -> None:
        """Send the action's operation; the answer is a notification, the change comes live."""
        row = self.rows.get(heinzel_id)
        name = row.name if row else heinzel_id
        state = row.state if row else None
        waits = bool(row and (row.pending_draft or row.pending_amendment or state == "proposed"))
        if (asked := actions.confirmation(action, name, state, waits)) is not None:
            from hz_tui.screens.confirm import ConfirmScreen

            if not await self.push_screen_wait(ConfirmScreen(*asked)):
                return
        kept = self.unanswered.pop((heinzel_id, action), None)
        operation, request = kept or actions.request_for(action, heinzel_id, state)
        try:
            result = await self.client.call(operation, request)
        except HzError as exc:
            again = ""
            if isinstance(exc, NotConnected) and exc.sent and getattr(request, "request_id", None):
                self.unanswered[heinzel_id, action] = operation, request
                again = " (asked again, it goes out under the same request id: it happens once)"
            self.notify(f"{name}: {exc.one_line()}{again}", severity="error", timeout=10)
            return
        self.notify(actions.describe(name, result))

    # -- themes ------------------------------------------------------------------------

    def action_next_theme(self) -> None:
        names = themes.THEME_NAMES
        current = names.index(self.theme) if self.theme in names else -1
        self.choose_theme(names[(current + 1) % len(names)])

    def choose_theme(self, name: str) -> None:
        """Switch theme and remember it in ``cockpit.json`` (not while the terminal decides)."""
        if themes.no_color():
            self.notify("NO_COLOR is set: the cockpit stays monochrome.")
            return
        self.theme = name
        if self.low_colours:
            return
        self.prefs = self.prefs.model_copy(update={"theme": name})
        self.save_prefs()

    def save_prefs(self) -> None:
        try:
            note = settings.save_prefs(self.home, self.prefs)
        except HzError as exc:
            self.notify(exc.one_line(), severity="warning")
            return
        if note:
            self.notify(note, severity="warning", timeout=10)


async def run(
    home: Home,
    client: KernelClient,
    *,
    beside: Sequence[Beside] = (),
    daemon_ends_with_it: bool = False,
) -> int:
    """Run the cockpit until the user quits, with ``beside`` running alongside in this loop.

    When the cockpit closes, the work beside it is told to stop and given
    ``BESIDE_GRACE_S`` to finish; what is still running then is cancelled
    (a turn cut off that way is resumed by the next kernel that starts).
    A user who quit handing the turns to the daemon gets them cut at once
    and the daemon started here (``hz_kernel.connect.hand_off``), each
    phase said on the terminal as it begins.
    Returns the exit status for the ``hz`` command.
    """
    stop = asyncio.Event()
    tasks = [asyncio.create_task(job(stop)) for job in beside]
    app = CockpitApp(home, client, daemon_ends_with_it=daemon_ends_with_it)
    ended_by = _quit_on_signals(app)
    handing: list[str] = []
    try:
        await app.run_async()
    finally:
        for signum in ended_by:
            asyncio.get_running_loop().remove_signal_handler(signum)
        from hz_tui.widgets.composer import settle

        if app.hand_off:
            handing = handing_off(client)
        elif app.cut_turns:
            cutting(client)
        elif app.cut_names:
            say(f"the daemon stops with the cockpit, cutting {_turns_of(app.cut_names)}")
        await settle()
        if app.link.current is not client:
            await app.link.current.close()
        stop.set()
        if tasks:
            # Handing off, the tick's own turn is cut at once too: the daemon resumes it.
            grace = 0 if app.hand_off else BESIDE_GRACE_S
            _, late = await asyncio.wait(tasks, timeout=grace)
            for task in late:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, return_exceptions=True)
    from hz_tui.held_rejects import unsent_note

    if (note := unsent_note(home)) is not None:
        sys.stderr.write(note)
    if app.hand_off:
        from hz_kernel.connect import hand_off

        report = await hand_off(client, home)
        resumes = f"; it resumes {_turns_of(handing)}" if handing else ""
        say(f"started the daemon (pid {report.pid}) at {report.address}{resumes}")
    return app.return_code or 0


def _quit_on_signals(app: CockpitApp) -> tuple[signal.Signals, ...]:
    """A closed terminal (SIGHUP) or a polite kill (SIGTERM) quits as ``q`` does, without the
    question (nobody is there to answer it: running turns are cut at a checkpoint and resumed
    by the next kernel). So the composer keeps its unsent text and the terminal gets its
    screen back, instead of the process dying mid-frame. The exit status is the shell's for
    that signal (128 + its number)."""
    loop = asyncio.get_running_loop()
    handled = (signal.SIGTERM, signal.SIGHUP)
    for signum in handled:
        loop.add_signal_handler(signum, app.exit, None, 128 + signum)
    return handled


def say(line: str) -> None:
    """One line on the terminal the cockpit left (a phase of what happens after it)."""
    sys.stdout.write(f"{line}\n")
    sys.stdout.flush()


def handing_off(client: KernelClient) -> list[str]:
    """Say at once what the hand-off to the daemon does, before any of it runs; the names of
    the heinzels whose turns it hands over."""
    from hz_kernel.connect import running_names

    names = running_names(client)
    if names:
        count = f"{len(names)} turn{'s' if len(names) != 1 else ''}"
        say(f"handing {count} to the daemon ({', '.join(names)}): cut now, resumed there…")
    else:
        say("starting the daemon…")
    return names


def cutting(client: KernelClient) -> None:
    """Say which turns quitting cuts, and that nothing of them is lost."""
    from hz_kernel.connect import running_names

    names = running_names(client)
    if names:
        they = "it resumes" if len(names) == 1 else "they resume"
        say(
            f"cut {_turns_of(names)} at the last checkpoint; {they} when a kernel next "
            "starts here (hz, or hz daemon start)"
        )


def _turns_of(names: list[str]) -> str:
    """``changelog's turn``, ``a's and b's turns``."""
    owned = [f"{name}'s" for name in names]
    joined = owned[0] if len(owned) == 1 else f"{', '.join(owned[:-1])} and {owned[-1]}"
    return f"{joined} turn{'s' if len(names) != 1 else ''}"
