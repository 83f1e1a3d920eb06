"""The cells a cockpit puts on the terminal, and whether each can be read.

Cells come from the screen's compositor after Textual's line filters (the
``NO_COLOR`` filter among them), so they are what the driver writes. A
colour is taken as the terminal shows it: cut down to its colour system
(``standard`` for ``TERM=linux``), the default foreground and background as
the terminal's own two colours, reverse video swapping the two.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.color import Color, ColorSystem
from rich.style import Style
from textual.app import App

#: The terminal's own foreground and background (``default``): distinct by definition.
TERMINAL_FG = "terminal foreground"
TERMINAL_BG = "terminal background"


@dataclass(frozen=True)
class Cell:
    x: int
    y: int
    text: str
    fg: object
    bg: object
    reverse: bool


def screen_cells(app: App[object], *, bright_backgrounds: bool = True) -> list[list[Cell]]:
    """Every cell of the app's current screen, row by row, as the terminal would get it.

    ``bright_backgrounds=False`` for the Linux console, which shows background
    entries 8–15 as 0–7.
    """
    system = app.console.color_system
    colours = ColorSystem.TRUECOLOR if system is None else _SYSTEMS[system]
    lines = []
    for y, strip in enumerate(app.screen._compositor.render_strips()):
        row: list[Cell] = []
        for segment in strip:
            if segment.control:
                continue
            style = segment.style or Style()
            fg = _shown(style.color, colours, TERMINAL_FG, bright=True)
            bg = _shown(style.bgcolor, colours, TERMINAL_BG, bright=bright_backgrounds)
            if style.reverse:
                fg, bg = bg, fg
            for char in segment.text:
                row.append(Cell(len(row), y, char, fg, bg, bool(style.reverse)))
        lines.append(row)
    return lines


def unreadable(cells: list[list[Cell]]) -> list[Cell]:
    """The cells whose foreground is their background."""
    return [cell for row in cells for cell in row if cell.fg == cell.bg]


def row_text(cells: list[list[Cell]], y: int) -> str:
    return "".join(cell.text for cell in cells[y])


_SYSTEMS = {
    "standard": ColorSystem.STANDARD,
    "256": ColorSystem.EIGHT_BIT,
    "truecolor": ColorSystem.TRUECOLOR,
    "windows": ColorSystem.WINDOWS,
}


def _shown(colour: Color | None, system: ColorSystem, default: str, *, bright: bool) -> object:
    """What the terminal shows for ``colour``: a palette entry, an RGB triplet, or its default."""
    if colour is None or colour.is_default:
        return default
    shown = colour.downgrade(system)
    if shown.number is not None and shown.number < 16:
        return shown.number if bright or shown.number < 8 else shown.number - 8
    return shown.get_truecolor()
