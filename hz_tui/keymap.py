"""Every key the cockpit answers to, in one place, each with a stable id.

Screens and widgets take their ``BINDINGS`` from here; the help screen and
the command palette list them from here (a binding's ``tooltip`` is its
palette entry's description where its key's meaning is shared by others);
``cockpit.json``'s ``keymap`` overrides them by id (Textual's keymap), e.g.
``{"home.filter": "f"}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

APP = [
    Binding("f1,question_mark", "help", "Help", id="app.help"),
    Binding("ctrl+p", "command_palette", "Commands", id="app.commands", show=False),
    Binding("f2", "daemon", "Kernel", id="app.daemon"),
    Binding("f3", "next_theme", "Theme", id="app.theme", show=False),
    Binding("f4", "review", "Review", id="app.review"),
    Binding("f5", "notices", "Notices", id="app.notices", show=False),
    Binding("f6", "graph", "Graph", id="app.graph", show=False),
    Binding("ctrl+q", "quit", "Quit", id="app.quit"),
]

HOME = [
    Binding("slash", "filter", "Filter", id="home.filter", key_display="/"),
    Binding("escape", "clear_filter", "Clear filter", id="home.clear_filter"),
    Binding("r", "refresh", "Refresh", id="home.refresh", show=False),
    Binding("ctrl+n", "new_heinzel", "New", id="home.new"),
    Binding("o", "toggle_preview", "Preview", id="home.preview", show=False),
    Binding("q", "app.quit", "Quit", id="home.quit", show=False),
    Binding("ctrl+c", "app.quit", "Quit (interrupt)", id="home.interrupt", show=False),
]

#: Actions on the selected heinzel (the table's row, or the open page); see ``hz_tui.actions``.
HEINZEL_ACTIONS = [
    Binding("a", "act('approve')", "Approve", id="act.approve"),
    Binding("x", "act('reject')", "Reject", id="act.reject", show=False),
    Binding("w", "act('wake')", "Wake", id="act.wake"),
    Binding("c", "act('resume')", "Continue", id="act.resume", show=False),
    Binding("p", "act('pause')", "Pause/unpause", id="act.pause", show=False),
    Binding("R", "act('retire')", "Retire/unretire", id="act.retire", show=False),
]

HEINZEL_TABLE = [
    Binding(
        "enter", "open", "Open", id="table.open", tooltip="Open the highlighted heinzel's page"
    ),
    Binding("s", "sort_next", "Sort", id="table.sort"),
    Binding("S", "sort_reverse", "Reverse", id="table.reverse", key_display="S", show=False),
    Binding("up,k", "cursor_up", "Up", id="table.up", show=False),
    Binding("down,j", "cursor_down", "Down", id="table.down", show=False),
    Binding("pageup", "page_up", "Page up", id="table.page_up", show=False),
    Binding("pagedown", "page_down", "Page down", id="table.page_down", show=False),
    Binding("home,g", "first", "First", id="table.first", show=False),
    Binding("end,G", "last", "Last", id="table.last", show=False),
]

FILTER_BAR = [
    Binding("escape", "clear", "Clear", id="filter.dismiss"),
    Binding("down", "to_table", "To table", id="filter.to_table", show=False),
]

HEINZEL = [
    Binding("escape", "back", "Back", id="heinzel.back"),
    Binding(
        "r",
        "refresh",
        "Refresh",
        id="heinzel.refresh",
        show=False,
        tooltip="Read this heinzel's page from the kernel again",
    ),
    Binding("i", "compose", "Message", id="heinzel.compose"),
    Binding("y", "answer", "Answer", id="heinzel.answer", tooltip="Answer the heinzel's question"),
    Binding("t", "retry", "Retry…", id="heinzel.retry"),
    Binding("D", "dismiss_lesson", "Dismiss lesson", id="heinzel.dismiss", show=False),
    Binding("ctrl+c", "stop_turn", "Stop turn (twice)", id="heinzel.stop", show=False),
    Binding("K", "ask_stop", "Stop turn…", id="heinzel.stop_ask", key_display="K"),
    Binding("G", "follow", "Jump to latest", id="heinzel.follow", key_display="G", show=False),
    Binding("v", "contract", "Contract", id="heinzel.contract"),
    Binding("m", "conversation", "Conversation", id="heinzel.conversation"),
    Binding("enter", "open_turn", "Transcript", id="heinzel.transcript"),
    Binding("down,j", "timeline_move(1)", "Next turn", id="heinzel.down", show=False),
    Binding("up,k", "timeline_move(-1)", "Previous turn", id="heinzel.up", show=False),
]

#: The timeline of turns on a heinzel's page.
TIMELINE = [
    Binding(
        "enter",
        "open_turn",
        "Transcript",
        id="timeline.open",
        tooltip="The highlighted turn's transcript: cause, context as sent, model calls, effects",
    ),
]

#: A turn's transcript and a heinzel's conversation: read-only, searchable pages.
TRANSCRIPT = [
    Binding("escape", "back", "Back", id="transcript.back"),
    Binding(
        "slash",
        "search",
        "Search",
        id="transcript.search",
        key_display="/",
        tooltip="Search this page for words; n and N walk the matches",
    ),
    Binding(
        "n", "next_match", "Next match", id="transcript.next", tooltip="The search's next match"
    ),
    Binding(
        "N",
        "previous_match",
        "Previous match",
        id="transcript.previous",
        key_display="N",
        tooltip="The search's previous match",
    ),
    Binding("j", "scroll_lines(1)", "Down", id="transcript.down", show=False),
    Binding("k", "scroll_lines(-1)", "Up", id="transcript.up", show=False),
    Binding("g", "top", "Top", id="transcript.top", show=False),
    Binding("G", "follow", "Follow the end", id="transcript.end", key_display="G"),
]

#: A turn's transcript only (the conversation shows no one turn).
TURN_PAGE = [
    Binding(
        "h",
        "forget",
        "Hide from model",
        id="transcript.forget",
        tooltip="Keep this turn out of what the model sees from now on; the record keeps it",
    ),
]

#: The search line of a transcript or conversation (an input: printable keys type).
SEARCH = [
    Binding("escape", "close", "Close search", id="search.close"),
]

#: The contract page: versions, diffs, and the proposal that waits for approval.
CONTRACT = [
    Binding("escape", "back", "Back", id="contract.back"),
    Binding(
        "d",
        "toggle_diff",
        "Diff/text",
        id="contract.diff",
        tooltip="The change from the version before ⇄ the whole contract",
    ),
    Binding(
        "a",
        "decide('approve')",
        "Approve",
        id="contract.approve",
        tooltip="Approve the contract that waits for you",
    ),
    Binding(
        "x",
        "decide('reject')",
        "Decline",
        id="contract.reject",
        tooltip="Decline the contract that waits for you",
    ),
]

#: The composer on a heinzel's page (a text area: printable keys type). Enter sends; a new
#: line is Ctrl+J everywhere, Shift+Enter where the terminal reports it (kitty's keyboard
#: protocol: kitty, WezTerm, foot, Ghostty; elsewhere Shift+Enter arrives as Enter).
COMPOSER = [
    Binding(
        "enter",
        "send",
        "Send",
        id="composer.send",
        tooltip="Send what is typed to the heinzel (steering its turn or queued)",
    ),
    Binding(
        "ctrl+j,shift+enter", "newline", "New line", id="composer.newline", key_display="Ctrl+J"
    ),
    Binding("up", "older", "Older message", id="composer.older", show=False),
    Binding("down", "newer", "Newer message", id="composer.newer", show=False),
    Binding("ctrl+t", "toggle_mode", "STEER/QUEUE", id="composer.mode"),
    Binding("escape", "leave", "Leave composer", id="composer.leave"),
    Binding(
        "ctrl+c",
        "screen.stop_turn",
        "Stop turn (twice)",
        id="composer.stop_twice",
        priority=True,
    ),
]

REVIEW = [
    Binding("j,down", "move(1)", "Down", id="review.down", show=False),
    Binding("k,up", "move(-1)", "Up", id="review.up", show=False),
    Binding(
        "enter",
        "show",
        "Diff",
        id="review.show",
        show=False,
        tooltip="Show the highlighted draft's diff again",
    ),
    Binding(
        "a",
        "decide('approve')",
        "Approve",
        id="review.approve",
        tooltip="Approve the highlighted draft",
    ),
    Binding(
        "x",
        "decide('reject')",
        "Reject",
        id="review.reject",
        tooltip="Reject the highlighted draft (u undoes it for a few seconds)",
    ),
    Binding("u", "undo", "Undo reject", id="review.undo"),
    Binding("space", "select", "Select", id="review.select", key_display="space"),
    Binding(
        "A", "approve_selected", "Approve selected", id="review.approve_selected", key_display="A"
    ),
    Binding("b", "switch_base", "Diff base", id="review.base"),
    Binding(
        "d",
        "toggle_markdown",
        "Markdown",
        id="review.markdown",
        tooltip="The diff ⇄ the draft rendered as Markdown",
    ),
    Binding(
        "slash",
        "filter",
        "Filter",
        id="review.filter",
        key_display="/",
        tooltip="Narrow the queue to drafts whose heinzel or document has every word",
    ),
    Binding("e", "edit", "Edit in $EDITOR", id="review.edit"),
    Binding(
        "n",
        "move(1, True)",
        "Next",
        id="review.next",
        show=False,
        tooltip="The next draft in the queue (after the last, the first)",
    ),
    Binding(
        "N",
        "move(-1, True)",
        "Previous",
        id="review.previous",
        key_display="N",
        show=False,
        tooltip="The draft before in the queue (before the first, the last)",
    ),
    Binding("escape", "back", "Back", id="review.back"),
]

#: A yes/no question before a destructive action (retire, daemon restart).
CONFIRM = [
    Binding("y", "confirm", "Yes", id="confirm.yes", tooltip="Yes: do what is asked"),
    Binding("escape", "cancel", "Cancel", id="confirm.cancel"),
]

DIALOG = [
    Binding("escape", "cancel", "Cancel", id="dialog.cancel"),
]

DAEMON = [
    Binding("escape", "back", "Back", id="daemon.back"),
    Binding(
        "r", "refresh", "Refresh", id="daemon.refresh", tooltip="Ask the kernel for its state again"
    ),
    Binding("ctrl+r", "restart", "Restart daemon", id="daemon.restart"),
    Binding("l", "logs", "Daemon log", id="daemon.logs"),
]

#: The daemon's log, followed live.
LOGS = [
    Binding("escape", "back", "Back", id="logs.back"),
    Binding("f", "toggle_follow", "Follow on/off", id="logs.follow"),
]

#: The notices page (F5): every toast the cockpit raised.
NOTICES = [
    Binding("escape", "close", "Back", id="notices.close"),
    Binding("f5", "close", "Back", id="notices.close_f5", show=False),
]

#: The graph page (F6): who reads and writes what.
GRAPH = [
    Binding("escape", "back", "Back", id="graph.back"),
    Binding("enter", "open", "Open heinzel", id="graph.open", show=False),
    Binding(
        "z",
        "toggle_focus",
        "This heinzel / all",
        id="graph.focus",
        tooltip="Narrow the graph to the highlighted heinzel and its neighbours (again: all)",
    ),
    Binding("r", "refresh", "Refresh", id="graph.refresh", tooltip="Ask for the graph again"),
]

HELP = [
    Binding("escape", "close", "Close", id="help.close"),
    Binding("f1,question_mark", "close", "Close", id="help.close_f1", show=False),
]


#: What one node holds (a screen's or widget's ``BINDINGS``): two ids on one key within one of
#: these would clash, so the override loader refuses that (``hz_tui.key_overrides``).
HOME_SCREEN = HOME + HEINZEL_ACTIONS
HEINZEL_SCREEN = HEINZEL + HEINZEL_ACTIONS
NODES = (
    APP,
    HOME_SCREEN,
    HEINZEL_TABLE,
    FILTER_BAR,
    HEINZEL_SCREEN,
    TIMELINE,
    TRANSCRIPT + TURN_PAGE,
    SEARCH,
    CONTRACT,
    COMPOSER,
    REVIEW,
    CONFIRM,
    DIALOG,
    DAEMON,
    LOGS,
    NOTICES,
    GRAPH,
    HELP,
)


@dataclass(frozen=True)
class Scope:
    """A group of bindings as the help screen titles it (``short``: the palette's prefix)."""

    title: str
    bindings: list[Binding]
    short: str


SCOPES = (
    Scope("Everywhere", APP, "Cockpit"),
    Scope("Heinzels (home)", HOME, "Home"),
    Scope("Heinzel table", HEINZEL_TABLE, "Table"),
    Scope("The selected heinzel (table or page)", HEINZEL_ACTIONS, "Heinzel"),
    Scope("Filter", FILTER_BAR, "Filter"),
    Scope("One heinzel", HEINZEL, "Heinzel"),
    Scope("Composer (on a heinzel's page)", COMPOSER, "Composer"),
    Scope("Timeline of turns", TIMELINE, "Turns"),
    Scope("Transcript and conversation", TRANSCRIPT, "Transcript"),
    Scope("A turn's transcript", TURN_PAGE, "Transcript"),
    Scope("Search (in a transcript)", SEARCH, "Search"),
    Scope("Contract page", CONTRACT, "Contract"),
    Scope("Draft review", REVIEW, "Review"),
    Scope("Dialogs", DIALOG, "Dialog"),
    Scope("Confirmations", CONFIRM, "Confirm"),
    Scope("Kernel page", DAEMON, "Kernel"),
    Scope("Daemon log", LOGS, "Daemon log"),
    Scope("Notices", NOTICES, "Notices"),
    Scope("Graph", GRAPH, "Graph"),
    Scope("Help", HELP, "Help"),
)

# -- one key, one meaning ---------------------------------------------------------------
# The decision, as data: what each key means wherever it is bound (lazygit and k9s
# conventions). Moving, going back and opening share their meaning by nature; every other
# key does one thing on every screen. tests/unit/test_keymap.py holds every binding to it.

MOVE = "move the cursor or the view (G: to the end, and follow it)"
BACK = "back: leave the page, close, cancel"
OPEN = "open what is highlighted, or send what is typed"
HELP_KEY = "help: every key (again: close it)"
FIND = "filter a list, or search a page"
NEXT = "the next match or item"
PREVIOUS = "the previous match or item"
REFRESH = "refresh from the kernel"
APPROVE = "approve what waits"
REJECT = "reject or decline what waits (asks first, or can be undone)"
INTERRUPT = "interrupt: stop the running turn (twice); on the home, quit"
ANSWER = "answer what is asked: yes to a question, or the heinzel's question"
DIFF_OR_TEXT = "diff ⇄ the text itself (the whole contract, the draft as Markdown)"

KEY_MEANINGS: dict[str, str] = {
    **dict.fromkeys(("up", "down", "k", "j", "pageup", "pagedown", "home", "end", "g", "G"), MOVE),
    "escape": BACK,
    "enter": OPEN,
    "f1": HELP_KEY,
    "question_mark": HELP_KEY,
    "ctrl+p": "the command palette",
    "f2": "the kernel page",
    "f3": "next theme",
    "f4": "review drafts",
    "f5": "the notices (again: close them)",
    "f6": "the graph: who reads and writes what",
    "ctrl+q": "quit",
    "q": "quit",
    "ctrl+c": INTERRUPT,
    "slash": FIND,
    "n": NEXT,
    "N": PREVIOUS,
    "r": REFRESH,
    "ctrl+n": "new heinzel",
    "o": "show or hide the preview",
    "s": "sort by the next column",
    "S": "reverse the sort",
    "a": APPROVE,
    "A": "approve every marked item",
    "x": REJECT,
    "u": "undo the last reject",
    "w": "wake: run a turn now",
    "c": "continue a turn that was cut off or parked",
    "p": "pause or unpause",
    "R": "retire or unretire (asks first)",
    "i": "write a message (the composer)",
    "y": ANSWER,
    "t": "retry the last turn with a hint",
    "D": "dismiss a lesson",
    "K": "stop the running turn, asking first",
    "v": "the heinzel's contract",
    "m": "the conversation: every message sent",
    "d": DIFF_OR_TEXT,
    "b": "switch the diff's base",
    "space": "mark or unmark",
    "e": "edit in $EDITOR",
    "ctrl+j": "a new line (typing)",
    "shift+enter": "a new line (typing)",
    "ctrl+t": "STEER ⇄ QUEUE (the composer)",
    "ctrl+r": "restart the daemon (asks first)",
    "l": "the daemon's log",
    "f": "follow on/off",
    "h": "hide a turn from the model (the record keeps it)",
    "z": "narrow to the highlighted heinzel (again: everything)",
}

#: Binding id -> its meaning; a binding whose keys mean something else fails the test.
MEANING_OF: dict[str, str] = {
    "app.help": HELP_KEY,
    "app.commands": KEY_MEANINGS["ctrl+p"],
    "app.daemon": KEY_MEANINGS["f2"],
    "app.theme": KEY_MEANINGS["f3"],
    "app.review": KEY_MEANINGS["f4"],
    "app.notices": KEY_MEANINGS["f5"],
    "app.graph": KEY_MEANINGS["f6"],
    "app.quit": "quit",
    "home.filter": FIND,
    "home.clear_filter": BACK,
    "home.refresh": REFRESH,
    "home.new": KEY_MEANINGS["ctrl+n"],
    "home.preview": KEY_MEANINGS["o"],
    "home.quit": "quit",
    "home.interrupt": INTERRUPT,
    "act.approve": APPROVE,
    "act.reject": REJECT,
    "act.wake": KEY_MEANINGS["w"],
    "act.resume": KEY_MEANINGS["c"],
    "act.pause": KEY_MEANINGS["p"],
    "act.retire": KEY_MEANINGS["R"],
    "table.open": OPEN,
    "table.sort": KEY_MEANINGS["s"],
    "table.reverse": KEY_MEANINGS["S"],
    **dict.fromkeys(
        ("table.up", "table.down", "table.page_up", "table.page_down", "table.first"), MOVE
    ),
    "table.last": MOVE,
    "filter.dismiss": BACK,
    "filter.to_table": MOVE,
    "heinzel.back": BACK,
    "heinzel.transcript": OPEN,
    "heinzel.refresh": REFRESH,
    "heinzel.compose": KEY_MEANINGS["i"],
    "heinzel.answer": ANSWER,
    "heinzel.retry": KEY_MEANINGS["t"],
    "heinzel.dismiss": KEY_MEANINGS["D"],
    "heinzel.stop": INTERRUPT,
    "heinzel.stop_ask": KEY_MEANINGS["K"],
    "heinzel.follow": MOVE,
    "heinzel.down": MOVE,
    "heinzel.up": MOVE,
    "heinzel.contract": KEY_MEANINGS["v"],
    "heinzel.conversation": KEY_MEANINGS["m"],
    "timeline.open": OPEN,
    "transcript.back": BACK,
    "transcript.search": FIND,
    "transcript.next": NEXT,
    "transcript.previous": PREVIOUS,
    **dict.fromkeys(("transcript.down", "transcript.up", "transcript.top"), MOVE),
    "transcript.end": MOVE,
    "transcript.forget": KEY_MEANINGS["h"],
    "search.close": BACK,
    "contract.back": BACK,
    "contract.diff": DIFF_OR_TEXT,
    "contract.approve": APPROVE,
    "contract.reject": REJECT,
    "composer.send": OPEN,
    "composer.newline": KEY_MEANINGS["ctrl+j"],
    "composer.older": MOVE,
    "composer.newer": MOVE,
    "composer.mode": KEY_MEANINGS["ctrl+t"],
    "composer.leave": BACK,
    "composer.stop_twice": INTERRUPT,
    "review.down": MOVE,
    "review.up": MOVE,
    "review.show": OPEN,
    "review.approve": APPROVE,
    "review.reject": REJECT,
    "review.undo": KEY_MEANINGS["u"],
    "review.select": KEY_MEANINGS["space"],
    "review.approve_selected": KEY_MEANINGS["A"],
    "review.base": KEY_MEANINGS["b"],
    "review.markdown": DIFF_OR_TEXT,
    "review.filter": FIND,
    "review.edit": KEY_MEANINGS["e"],
    "review.next": NEXT,
    "review.previous": PREVIOUS,
    "review.back": BACK,
    "confirm.yes": ANSWER,
    "confirm.cancel": BACK,
    "dialog.cancel": BACK,
    "daemon.back": BACK,
    "daemon.refresh": REFRESH,
    "daemon.restart": KEY_MEANINGS["ctrl+r"],
    "daemon.logs": KEY_MEANINGS["l"],
    "logs.back": BACK,
    "logs.follow": KEY_MEANINGS["f"],
    "notices.close": BACK,
    "notices.close_f5": KEY_MEANINGS["f5"],
    "graph.back": BACK,
    "graph.open": OPEN,
    "graph.focus": KEY_MEANINGS["z"],
    "graph.refresh": REFRESH,
    "help.close": BACK,
    "help.close_f1": HELP_KEY,
}

#: Ids that were renamed or folded into another: a ``cockpit.json`` override naming the old
#: id still applies, to the new one.
ALIASES = {"home.review": "app.review"}

#: How a key name reads on screen where Textual's name is not what the key shows.
_SHOWN = {
    "question_mark": "?",
    "slash": "/",
    "escape": "Esc",
    "enter": "Enter",
    "space": "Space",
    "tab": "Tab",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
    "delete": "Del",
    "backspace": "Backspace",
}
#: Modifiers as the help screen writes them (``ctrl+j`` is Ctrl+J, as the composer says).
_MODIFIERS = {"ctrl": "Ctrl", "shift": "Shift", "alt": "Alt"}


def binding_ids() -> set[str]:
    return {b.id for scope in SCOPES for b in scope.bindings if b.id}


def binding(binding_id: str) -> Binding:
    """The binding with this id."""
    return next(b for scope in SCOPES for b in scope.bindings if b.id == binding_id)


def keys_for(binding: Binding, overrides: dict[str, str]) -> str:
    """The keys a binding answers to now, after the user's overrides."""
    keys = overrides.get(binding.id or "", binding.key)
    if binding.key_display and keys == binding.key:
        return binding.key_display
    return ", ".join(_shown(key.strip()) for key in keys.split(","))


def _shown(key: str) -> str:
    """One way of writing keys everywhere: ``ctrl+n`` as Ctrl+N, ``shift+tab`` as Shift+Tab,
    ``f1`` as F1, ``escape`` as Esc, ``pageup`` as PgUp, ``slash`` as /; letters as they are."""
    *modifiers, name = key.split("+") if key != "+" else [key]
    if name in _SHOWN:
        shown = _SHOWN[name]
    elif (name[:1] == "f" and name[1:].isdigit()) or (modifiers and len(name) == 1):
        shown = name.upper()
    else:
        shown = name
    return "+".join([*(_MODIFIERS.get(m, m) for m in modifiers), shown])


def shown_keys(binding_id: str, overrides: dict[str, str]) -> str:
    """The keys that run the binding with this id now, as the help screen shows them."""
    return keys_for(binding(binding_id), overrides)
