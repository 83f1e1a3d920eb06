"""The command palette (Ctrl+P): every cockpit command, plus "open <heinzel>" for each heinzel.

Every key of the screen the palette opened on is a command too: the fixed
commands name the binding they stand for (``Command.binding``), and the
screen's other keys are listed from the keymap (``screen_commands``), so
no action needs its key to be known. Moving and leaving are keys only.

The palette offers only what works on its screen: a fixed command whose
key that screen does not hold is left out, unless it runs from anywhere
(``Command.anywhere``); then it is listed without the key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.actions import parse as parse_action
from textual.binding import Binding
from textual.command import CommandList, CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode
from textual.screen import Screen

from hz_tui import actions, keymap, new_heinzel, rows, themes

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

#: Keys that only make sense pressed (or are the palette itself): not listed as commands.
KEY_ONLY = frozenset(
    {
        "app.commands",
        "home.interrupt",
        "home.quit",
        "heinzel.transcript",
        "heinzel.stop",
        "composer.stop_twice",
        "composer.newline",
        "help.close_f1",
        "notices.close_f5",
    }
)


@dataclass(frozen=True)
class Command:
    title: str
    help: str
    run: Callable[[], object]
    binding: str | None = None
    """The id of the key binding this command stands for, if one does."""
    anywhere: bool = False
    """It works on any screen, where its key does not: listed there too, without the key."""


def in_palette(binding_id: str) -> bool:
    """Whether the palette lists this binding: every one but moving, leaving and key-only."""
    return keymap.MEANING_OF[binding_id] not in (keymap.MOVE, keymap.BACK) and (
        binding_id not in KEY_ONLY
    )


def cockpit_commands(app: CockpitApp) -> list[Command]:
    """The fixed commands, in the order the palette lists them before you type."""
    commands = [
        Command("Home: all heinzels", "The table of every heinzel", app.action_home),
        Command(
            "Filter heinzels", "Type words to narrow the table", app.action_filter, "home.filter"
        ),
        Command(
            "Review drafts",
            "Every waiting draft, its diff, approve or reject",
            app.action_review,
            "app.review",
        ),
        Command(
            "New heinzel",
            "From a template or a sentence; you approve its contract",
            partial(new_heinzel.start, app),
            "home.new",
            anywhere=True,
        ),
        Command("Refresh", "Ask the kernel for every row again", app.reload, "home.refresh"),
        Command(
            "Kernel page",
            "Which kernel, process, home and database",
            app.action_daemon,
            "app.daemon",
        ),
        Command(
            "Daemon log",
            "The daemon's log, followed as it is written",
            app.action_logs,
            "daemon.logs",
            anywhere=True,
        ),
        Command(
            "Notices",
            "Every notice raised since the cockpit started",
            app.action_notices,
            "app.notices",
        ),
        Command(
            "Graph",
            "Who reads and writes what: what contracts declare, what turns did",
            app.action_graph,
            "app.graph",
        ),
        Command(
            "Toggle the preview",
            "The selected heinzel beside the home table",
            app.toggle_preview,
            "home.preview",
        ),
        Command(
            "Stop the running turn…",
            'On a heinzel\'s page: asks "stop think?", naming the step, first',
            partial(_ask_stop, app),
            "heinzel.stop_ask",
        ),
        Command("Help: every key", "List every binding", app.action_help, "app.help"),
    ]
    commands.append(
        Command(
            "Sort by the next column", "Move the table's sort along", app.sort_next, "table.sort"
        )
    )
    commands += [
        Command(
            f"Sort by {c.label.lower()}",
            "Order the table by this column",
            partial(app.sort_home, c.key),
        )
        for c in rows.COLUMNS
    ]
    commands.append(
        Command("Reverse sort", "Flip the table's order", app.reverse_home, "table.reverse")
    )
    commands += [
        Command(
            a.title,
            a.help,
            partial(app.act_on_selected, a.name),
            f"act.{a.name}",
        )
        for a in actions.ACTIONS
    ]
    commands.append(
        Command("Next theme", "Switch to the next theme", app.action_next_theme, "app.theme")
    )
    commands += [
        Command(f"Theme: {name}", "Switch and remember the theme", partial(app.choose_theme, name))
        for name in themes.THEME_NAMES
    ]
    commands += page_commands(app)
    bell = "off" if app.bell_on else "on"
    commands.append(
        Command(f"Bell: turn {bell}", "Ring when a draft lands or a turn fails", app.toggle_bell)
    )
    commands.append(
        Command(
            "Quit", "Leave the cockpit (the kernel's work goes on)", app.action_quit, "app.quit"
        )
    )
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
            "heinzel.conversation",
            anywhere=True,
        ),
    ]


def screen_commands(screen: Screen[object], covered: set[str]) -> list[Command]:
    """The keys of ``screen`` and its widgets that no command in ``covered`` stands for.

    Each runs its action on the node that holds the binding, as the key would.
    """
    scope_of = {b.id: scope for scope in keymap.SCOPES for b in scope.bindings if b.id}
    commands: list[Command] = []
    seen = set(covered)
    nodes: list[DOMNode] = [screen, *screen.query("*")]
    for node in nodes:
        for binding in getattr(node, "BINDINGS", []):
            if not isinstance(binding, Binding) or binding.id not in scope_of:
                continue
            if binding.id in seen or not in_palette(binding.id):
                continue
            if hidden(node, binding):
                continue
            seen.add(binding.id)
            title = f"{scope_of[binding.id].short}: {binding.description}"
            meaning = keymap.MEANING_OF[binding.id]
            about = binding.tooltip or meaning[:1].upper() + meaning[1:]  # "$EDITOR" stays
            run = partial(node.run_action, binding.action)
            commands.append(Command(title, about, run, binding.id))
    return commands


def hidden(node: DOMNode, binding: Binding) -> bool:
    """Whether ``node`` hides this key now (``check_action`` is False): then the key bar
    drops it, and so does the palette. A key shown disabled (None) stays listed."""
    _, action, parameters = parse_action(binding.action)
    return node.check_action(action, parameters) is False


def held_bindings(screen: Screen[object]) -> set[str]:
    """The binding ids whose keys work on ``screen``: its own, its widgets' and the app's."""
    held = {b.id for b in keymap.APP if b.id}
    for node in [screen, *screen.query("*")]:
        held |= {b.id for b in getattr(node, "BINDINGS", []) if isinstance(b, Binding) and b.id}
    return held


def here(commands: list[Command], held: set[str]) -> list[Command]:
    """The commands that work where the keys ``held`` do; a key held elsewhere is not named."""
    kept = []
    for c in commands:
        if c.binding is None or c.binding in held:
            kept.append(c)
        elif c.anywhere:
            kept.append(Command(c.title, c.help, c.run))
    return kept


def with_keys(app: CockpitApp, commands: list[Command]) -> list[Command]:
    """Each command's help ends with its key, as the user's keymap binds it now."""
    return [
        Command(
            c.title,
            f"{c.help} · {keymap.shown_keys(c.binding, app.keymap_overrides)}",
            c.run,
            c.binding,
        )
        if c.binding
        else c
        for c in commands
    ]


def palette_commands(app: CockpitApp, screen: Screen[object]) -> list[Command]:
    """What the palette lists on ``screen``: the fixed commands that work there, then the
    screen's own keys."""
    held = held_bindings(screen)
    fixed = here(cockpit_commands(app), held)
    covered = {c.binding for c in fixed if c.binding}
    return with_keys(app, fixed + screen_commands(screen, covered))


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
        for command in palette_commands(self.cockpit, self.screen):
            yield DiscoveryHit(command.title, command.run, help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        commands = palette_commands(self.cockpit, self.screen) + heinzel_commands(self.cockpit)
        for command in commands:
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), command.run, help=command.help)


def _ask_stop(app: CockpitApp) -> None:
    """The page's ``K`` (the palette offers it there only)."""
    ask = getattr(app.screen, "action_ask_stop", None)
    if ask is None:
        app.notify("Open a heinzel's page to stop its running turn.", severity="warning")
        return
    ask()


class Palette(CommandPalette):
    """Textual's command palette, with paging keys that do nothing when its list has no room.

    On a terminal of a few rows the list can be laid out zero lines high, and a
    PageUp then fails inside the list (attack pass: a traceback ended the
    cockpit); the key is dropped instead.
    """

    def _action_command_list(self, action: str) -> None:
        lists = self.query(CommandList)
        if lists and lists.first().size.height == 0:
            return
        super()._action_command_list(action)
