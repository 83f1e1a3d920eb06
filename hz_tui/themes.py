"""The cockpit's themes, read from TOML: ``hz_tui/themes`` in a wheel, ``themes/`` in a checkout.

Themes are data rather than code so a user (or a packager) can read and
adjust them without touching Python. The terminal can overrule the user's
choice at start: ``NO_COLOR`` and a terminal of sixteen colours or fewer
(``TERM=linux``, ``screen``, plain ``xterm``) get the ANSI theme, which uses
the terminal's own palette and shows the cursor row in reverse video, so
every cell on it stays readable in any palette and with colour removed.
"""

from __future__ import annotations

import os
import tomllib
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError
from textual.theme import Theme

from hz_kernel.errors import HzError

DARK = "hz-dark"
LIGHT = "hz-light"
ANSI = "hz-ansi"
THEME_NAMES = (DARK, LIGHT, ANSI)
#: Rich's names for the colour systems of terminals with at most sixteen colours; a theme
#: of hex colours is cut down to those sixteen, and cells that differed can end up equal.
LOW_COLOUR_SYSTEMS = ("standard", "windows")


class ThemeFile(BaseModel):
    """One theme file's shape: Textual's theme fields, nothing else."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    name: str
    dark: bool = True
    ansi: bool = False
    primary: str
    secondary: str | None = None
    accent: str | None = None
    warning: str | None = None
    error: str | None = None
    success: str | None = None
    foreground: str | None = None
    background: str | None = None
    surface: str | None = None
    panel: str | None = None
    boost: str | None = None
    variables: dict[str, str] = {}

    def to_theme(self) -> Theme:
        return Theme(**self.model_dump())


def themes_dir() -> Traversable:
    """Where the theme files are: packaged beside the code, else the checkout's ``themes/``."""
    packaged = files("hz_tui") / "themes"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "themes"


def load_themes(directory: Traversable | None = None) -> list[Theme]:
    """Every ``*.toml`` theme in ``directory``, validated (``HZU060`` names a bad file)."""
    folder = directory or themes_dir()
    themes = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        try:
            themes.append(ThemeFile.model_validate(tomllib.loads(entry.read_text())).to_theme())
        except (tomllib.TOMLDecodeError, ValidationError, UnicodeDecodeError) as exc:
            reason = str(exc).splitlines()[0]
            raise HzError("HZU060", f"not a valid theme: {reason}", entry.name) from None
    return themes


def no_color() -> bool:
    """``NO_COLOR`` is set (to anything: Textual's own test, so both agree)."""
    return "NO_COLOR" in os.environ


def low_colour(color_system: str | None) -> bool:
    """Whether the terminal shows sixteen colours or fewer.

    ``color_system`` is what Rich made of ``TERM``/``COLORTERM`` for Textual's
    console (``None``: no colour at all).
    """
    return color_system is None or color_system in LOW_COLOUR_SYSTEMS


def choose_theme(
    saved: str | None, configured: str, available: set[str], *, low_colours: bool = False
) -> str:
    """The theme to start with: ANSI under ``NO_COLOR`` or on a low-colour terminal, else the
    last choice, else hz.toml's."""
    if no_color() or low_colours:
        return ANSI
    for candidate in (saved, configured):
        if candidate in available:
            return candidate
    return DARK
