"""The command palette (Ctrl+P): every cockpit command, plus "open <heinzel>" for each heinzel."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from hz_tui import actions, new_heinzel, rows, themes

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp


@dataclass(frozen=True)
class Command:
    title: str
    help: str
    run: Callable[[], object]


def cockpit_commands(app: CockpitApp) -> list[Command]:
    """The fixed commands, in the order the palette lists them before you type."""
    commands = [
        Command("Home: all heinzels", "The table of every heinzel", app.action_home),
        Command("Filter heinzels", "Type words to narrow the table", app.action_filter),
        Command(
            "Review drafts", "Every waiting draft, its diff, approve or reject", app.action_review
        ),
        Command(
            "New heinzel",
            "From a template or a sentence; you approve its contract",
            partial(new_heinzel.start, app),
        ),
        Command("Refresh", "Ask the kernel for every row again", app.reload),
        Command("Kernel page", "Which kernel, process, home and database", app.action_daemon),
        Command("Daemon log", "The daemon's log, followed as it is written", app.action_logs),
        Command("Notices", "Every notice raised since the cockpit started", app.action_notices),
        Command(
            "Toggle the preview",
            "The selected heinzel beside the home table",
            app.toggle_preview,
        ),
        Command(
            "Stop the running turn…",
            'On a heinzel\'s page: asks "stop think?", naming the step, first',
            partial(_ask_stop, app),
        ),
        Command("Help: every key", "List every binding", app.action_help),
    ]
    commands += [
        Command(f"Sort by {c.label.lower()}", "Order the table", partial(app.sort_home, c.key))
        for c in rows.COLUMNS
    ]
    commands.append(Command("Reverse sort", "Flip the table's order", app.reverse_home))
    commands += [
        Command(f"{a.label} the selected heinzel", a.help, partial(app.act_on_selected, a.name))
        for a in actions.ACTIONS
    ]
    commands += [
        Command(f"Theme: {name}", "Switch and remember the theme", partial(app.choose_theme, name))
        for name in themes.THEME_NAMES
    ]
    commands += page_commands(app)
    bell = "off" if app.bell_on else "on"
    commands.append(
        Command(f"Bell: turn {bell}", "Ring when a draft lands or a turn fails", app.toggle_bell)
    )
    commands.append(Command("Quit", "Leave the cockpit (the kernel's work goes on)", app.exit))
    return commands


def page_commands(app: CockpitApp) -> list[Command]:
    """The open heinzel page's own commands, while one is open."""
    from hz_tui.screens.heinzel import HeinzelScreen  # the page imports much; only when asked

    page = next((s for s in reversed(app.screen_stack) if isinstance(s, HeinzelScreen)), None)
    if page is None:
        return []
    return [
        Command(
            "Transcript of the newest turn",
            "Its cause, inputs, context as sent, model requests, effects and cost",
            page.action_transcript,
        ),
        Command(
            "Conversation",
            "Every message you sent this heinzel and the turn it reached",
            page.action_conversation,
        ),
    ]


def heinzel_commands(app: CockpitApp) -> list[Command]:
    """One "open" command per heinzel, so a name typed in the palette jumps to its page."""
    return [
        Command(
            f"Open {item.name}",
            f"{item.state} · {item.contract_name or 'no contract'}",
            partial(app.open_heinzel, item.id),
        )
        for item in sorted(app.rows.values(), key=lambda i: i.name)
    ]


class CockpitCommands(Provider):
    """Fuzzy search over the cockpit's commands and heinzel names."""

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    async def discover(self) -> Hits:
        for command in cockpit_commands(self.cockpit):
            yield DiscoveryHit(command.title, command.run, help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in cockpit_commands(self.cockpit) + heinzel_commands(self.cockpit):
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), command.run, help=command.help)


def _ask_stop(app: CockpitApp) -> None:
    """The page's ``K``; elsewhere there is no one turn to stop."""
    ask = getattr(app.screen, "action_ask_stop", None)
    if ask is None:
        app.notify("Open a heinzel's page to stop its running turn.", severity="warning")
        return
    ask()
