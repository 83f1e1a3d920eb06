"""Where toasts go on a page: bottom right, above everything under the page's body.

A page is a header, a body (the table, the diff, the heinzel's page) and what
sits under the body: the composer where the user types, the review desk's
status line, the key bar. Textual docks toasts at the bottom right, over that
floor; at the top right they covered the first rows of the body instead (the
review desk's document header and its "since last approved" line, the
table's column names, the preview's name). So the toasts stand on the floor,
and the stack never reaches the body's first ``HEAD_ROWS`` rows: what they
cover is the end of the body, beside the newest lines, and only while they
show. The floor moves (a multi-line composer grows), so the place is worked
out again after every layout of the page, and when the toasts no longer fit
in the room left, the oldest come down so the newest show whole.
"""

from __future__ import annotations

from weakref import WeakSet

from textual.app import App
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets._toast import Toast, ToastHolder, ToastRack
from textual.widgets._tooltip import Tooltip

from hz_tui.widgets.key_bar import KeyBar

#: The body rows toasts leave clear: the review desk's document header is four lines
#: (its last says what the diff is against), a table's column names one.
HEAD_ROWS = 4

_followed: WeakSet[Screen[object]] = WeakSet()


def keep_toasts_clear(app: App[object], screen: Screen[object]) -> None:
    """Keep the toasts of ``screen`` off its floor and its head, from its next layout on (a
    screen just pushed has no children yet: ``app`` listens for it)."""
    if screen in _followed or not app.is_running:
        return  # an app that is closing changes screens as it pops them: nothing to place
    _followed.add(screen)
    screen.screen_layout_refresh_signal.subscribe(app, place)


def body(screen: Screen[object]) -> Widget | None:
    """The page's body: its tallest child not docked to an edge (Textual's own aside)."""
    laid = [
        child
        for child in screen.children
        if child.display
        and child.styles.dock == "none"
        and not isinstance(child, ToastRack | Tooltip)
    ]
    return max(laid, key=lambda child: child.region.height, default=None)


def place(screen: Screen[object]) -> None:
    """Stand the toast rack of a page (a screen with a key bar) on the floor and cap its
    height below the body's head; on a dialog, keep the toasts under the dialog."""
    main = body(screen)
    racks = screen.query_children(ToastRack)
    if main is None or not racks or not main.region:
        return
    if not screen.query_children(KeyBar):
        below_dialog(racks.first(), screen.size.height - main.region.bottom)
        return
    floor = screen.size.height - main.region.bottom
    room = max(main.region.height - HEAD_ROWS, 0)
    rack = racks.first()
    for holder in rack.query_children(ToastHolder):
        if not holder.children:
            # Textual takes a replaced toast down but leaves its holder: under a capped height
            # the empty holders pile up above the newest toasts and push them out of sight.
            holder.remove()
    styles = rack.styles
    if styles.margin.bottom != floor:
        styles.margin = (0, 0, floor, 0)
    if styles.max_height is None or styles.max_height.value != room:
        styles.max_height = room
    make_room(rack, room)


def below_dialog(rack: ToastRack, below: int) -> None:
    """Fit the toasts in the ``below`` rows under a dialog (F1's keys, a question), never
    over it: with no room there, they wait unseen for the dialog to close (F5 lists them)."""
    room = below - int(rack.styles.margin.bottom)
    rack.display = room > 0
    if room > 0:
        if rack.styles.max_height is None or rack.styles.max_height.value != room:
            rack.styles.max_height = room
        make_room(rack, room)


def shade(rack: ToastRack) -> None:
    """Every second toast of the stack a shade lighter: they touch, and two of one severity
    would read as one."""
    for index, toast in enumerate(rack.query(Toast)):
        toast.set_class(index % 2 == 1, "-second")


def make_room(rack: ToastRack, room: int) -> None:
    """Take the oldest toasts down until the rest fit in ``room`` rows, whole (the newest
    stays, whatever its size): a rack taller than its room showed the oldest and cut the
    newest. A toast taken down counts as gone for the notices; F5 still lists it."""
    shade(rack)
    shown = list(rack.query(Toast))
    # Only the toasts are laid out (the rack and each toast's holder are hidden).
    heights = [t.outer_size.height + t.styles.margin.top + t.styles.margin.bottom for t in shown]
    if not all(toast.outer_size.height for toast in shown):
        return  # a toast just mounted: the next layout has its height
    while len(shown) > 1 and sum(heights) > room:
        heights.pop(0)
        toast = shown.pop(0)
        toast._notification.timeout = 0  # the notice board reads it as gone
        toast._expire()
