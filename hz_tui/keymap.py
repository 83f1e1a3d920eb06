"""Every key the cockpit answers to, in one place, each with a stable id.

Screens and widgets take their ``BINDINGS`` from here; the help screen and
the command palette list them from here; ``cockpit.json``'s ``keymap``
overrides them by id (Textual's keymap), e.g. ``{"home.filter": "f"}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

APP = [
    Binding("f1", "help", "Help", id="app.help"),
    Binding("ctrl+p", "command_palette", "Commands", id="app.commands", show=False),
    Binding("f2", "daemon", "Kernel", id="app.daemon"),
    Binding("f3", "next_theme", "Theme", id="app.theme", show=False),
    Binding("f4", "review", "Review", id="app.review"),
    Binding("f5", "notices", "Notices", id="app.notices", show=False),
    Binding("ctrl+q", "quit", "Quit", id="app.quit"),
]

HOME = [
    Binding("slash", "filter", "Filter", id="home.filter", key_display="/"),
    Binding("escape", "clear_filter", "Clear filter", id="home.clear_filter"),
    Binding("r", "refresh", "Refresh", id="home.refresh", show=False),
    Binding("n", "new_heinzel", "New", id="home.new"),
    Binding("o", "toggle_preview", "Preview", id="home.preview", show=False),
    Binding("v", "app.review", "Review drafts", id="home.review", show=False),
    Binding("q,ctrl+c", "app.quit", "Quit", id="home.quit", show=False),
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
    Binding("enter", "open", "Open", id="table.open"),
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
    Binding("escape", "to_table", "Done", id="filter.dismiss"),
    Binding("down", "to_table", "To table", id="filter.to_table", show=False),
]

HEINZEL = [
    Binding("escape", "back", "Back", id="heinzel.back"),
    Binding("r", "refresh", "Refresh", id="heinzel.refresh", show=False),
    Binding("i", "compose", "Message", id="heinzel.compose"),
    Binding("y", "answer", "Answer", id="heinzel.answer"),
    Binding("t", "retry", "Retry…", id="heinzel.retry"),
    Binding("d", "dismiss_lesson", "Dismiss lesson", id="heinzel.dismiss", show=False),
    Binding("ctrl+c", "stop_turn", "Stop turn (twice)", id="heinzel.stop", show=False),
    Binding("K", "ask_stop", "Stop turn…", id="heinzel.stop_ask", key_display="K", show=False),
    Binding("G", "follow", "Jump to latest", id="heinzel.follow", key_display="G", show=False),
    Binding("v", "contract", "Contract", id="heinzel.contract"),
    Binding("m", "conversation", "Conversation", id="heinzel.conversation"),
]

#: The timeline of turns on a heinzel's page.
TIMELINE = [
    Binding("enter", "open_turn", "Transcript", id="timeline.open"),
]

#: A turn's transcript and a heinzel's conversation: read-only, searchable pages.
TRANSCRIPT = [
    Binding("escape", "back", "Back", id="transcript.back"),
    Binding("slash", "search", "Search", id="transcript.search", key_display="/"),
    Binding("n", "next_match", "Next match", id="transcript.next"),
    Binding("N", "previous_match", "Previous match", id="transcript.previous", key_display="N"),
    Binding("j", "scroll_lines(1)", "Down", id="transcript.down", show=False),
    Binding("k", "scroll_lines(-1)", "Up", id="transcript.up", show=False),
    Binding("g", "top", "Top", id="transcript.top", show=False),
    Binding("G", "follow", "Follow the end", id="transcript.end", key_display="G"),
]

#: The search line of a transcript or conversation (an input: printable keys type).
SEARCH = [
    Binding("escape", "close", "Close search", id="search.close"),
]

#: The contract page: versions, diffs, and the proposal that waits for approval.
CONTRACT = [
    Binding("escape", "back", "Back", id="contract.back"),
    Binding("d", "toggle_diff", "Diff/text", id="contract.diff"),
    Binding("a", "decide('approve')", "Approve", id="contract.approve"),
    Binding("x", "decide('reject')", "Decline", id="contract.reject"),
]

#: The composer on a heinzel's page (a text area: printable keys type). Enter sends; a new
#: line is Ctrl+J everywhere, Shift+Enter where the terminal reports it (kitty's keyboard
#: protocol: kitty, WezTerm, foot, Ghostty; elsewhere Shift+Enter arrives as Enter).
COMPOSER = [
    Binding("enter", "send", "Send", id="composer.send"),
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
        show=False,
        priority=True,
    ),
]

REVIEW = [
    Binding("j,down", "move(1)", "Down", id="review.down", show=False),
    Binding("k,up", "move(-1)", "Up", id="review.up", show=False),
    Binding("enter", "show", "Diff", id="review.show", show=False),
    Binding("a", "decide('approve')", "Approve", id="review.approve"),
    Binding("x", "decide('reject')", "Reject", id="review.reject"),
    Binding("u", "undo", "Undo reject", id="review.undo", show=False),
    Binding("space", "select", "Select", id="review.select", key_display="space"),
    Binding("A", "approve_selected", "Approve selected", id="review.approve_selected", show=False),
    Binding("b", "switch_base", "Diff base", id="review.base"),
    Binding("m", "toggle_markdown", "Markdown", id="review.markdown"),
    Binding("slash", "filter", "Filter", id="review.filter", key_display="/"),
    Binding("e", "edit", "Edit in $EDITOR", id="review.edit"),
    Binding("n", "move(1)", "Next", id="review.next", show=False),
    Binding("escape", "back", "Back", id="review.back"),
]

#: A yes/no question before a destructive action (retire, daemon restart).
CONFIRM = [
    Binding("y", "confirm", "Yes", id="confirm.yes"),
    Binding("n,escape", "cancel", "Cancel", id="confirm.cancel"),
]

DIALOG = [
    Binding("escape", "cancel", "Cancel", id="dialog.cancel"),
]

DAEMON = [
    Binding("escape", "back", "Back", id="daemon.back"),
    Binding("r", "refresh", "Refresh", id="daemon.refresh"),
    Binding("R", "restart", "Restart daemon", id="daemon.restart", key_display="R"),
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

HELP = [
    Binding("escape", "close", "Close", id="help.close"),
    Binding("f1", "close", "Close", id="help.close_f1", show=False),
]


@dataclass(frozen=True)
class Scope:
    """A group of bindings as the help screen titles it."""

    title: str
    bindings: list[Binding]


SCOPES = (
    Scope("Everywhere", APP),
    Scope("Heinzels (home)", HOME),
    Scope("Heinzel table", HEINZEL_TABLE),
    Scope("The selected heinzel (table or page)", HEINZEL_ACTIONS),
    Scope("Filter", FILTER_BAR),
    Scope("One heinzel", HEINZEL),
    Scope("Composer (on a heinzel's page)", COMPOSER),
    Scope("Timeline of turns", TIMELINE),
    Scope("Transcript and conversation", TRANSCRIPT),
    Scope("Search (in a transcript)", SEARCH),
    Scope("Contract page", CONTRACT),
    Scope("Draft review", REVIEW),
    Scope("Dialogs", DIALOG),
    Scope("Confirmations", CONFIRM),
    Scope("Kernel page", DAEMON),
    Scope("Daemon log", LOGS),
    Scope("Notices", NOTICES),
    Scope("Help", HELP),
)


def binding_ids() -> set[str]:
    return {b.id for scope in SCOPES for b in scope.bindings if b.id}


def keys_for(binding: Binding, overrides: dict[str, str]) -> str:
    """The keys a binding answers to now, after the user's overrides."""
    keys = overrides.get(binding.id or "", binding.key)
    if binding.key_display and keys == binding.key:
        return binding.key_display
    return ", ".join(k.strip() for k in keys.split(","))
