"""The README's command list names every command ``hz --help`` offers (issue 12 item 14).

A new user learns the commands from the README; one missing there (``hz heinzel
rename``, which ``HZC051`` tells the user to use) is a command they never find.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from hz_kernel.cli import build_parser
from hz_tui.serve import register as register_serve

README = Path(__file__).resolve().parents[2] / "README.md"


def _commands(parser: argparse.ArgumentParser, prefix: str = "hz") -> set[str]:
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, f"{prefix} {name}")
                found |= nested or {f"{prefix} {name}"}
    return found


def _listed() -> set[str]:
    """The words of the README's command block (commands are listed as ``a|b|c`` too)."""
    block = README.read_text().split("## Commands", 1)[1].split("```")[1]
    return set(re.findall(r"[a-z][a-z-]*", block))


def test_issue12_item14_the_readme_lists_every_command() -> None:
    words = _listed()
    commands = _commands(build_parser([register_serve]))
    missing = [c for c in sorted(commands) if not set(c.split()) <= words]
    assert missing == []
