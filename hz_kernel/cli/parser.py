"""The command line's parser: usage errors as one coded line and exit code 2, and what a
command is (a coroutine on a ``KernelClient``) and whether it writes."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from hz_kernel.client import KernelClient
from hz_kernel.errors import echoed

Command = Callable[[KernelClient, argparse.Namespace], Awaitable[int]]
#: Adds commands to the main parser from outside the kernel (``hz serve``, by ``hz_tui.entry``).
Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: The commands that change state: they adopt the home's daemon or start one (``may_start``).
WRITES: set[Command] = set()


def writes(command: Command) -> Command:
    """Mark ``command`` as one that changes state."""
    WRITES.add(command)
    return command


class Subcommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Subcommands whose own ``--help`` opens with the line that lists them."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("description", kwargs.get("help"))
        return super().add_parser(name, **kwargs)


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one coded line and exit code 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", Subcommands)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A value outside the choices (a mistyped command) names the closest one."""
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(choice) for choice in choices]
        close = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        if isinstance(action, argparse._SubParsersAction):
            message = f"unknown command {value!r}{hint} (commands: {', '.join(names)})"
            raise argparse.ArgumentError(None, message)
        message = f"invalid choice {value!r}{hint} (choose from {', '.join(names)})"
        raise argparse.ArgumentError(action, message)

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(echoed(f"HZU000: {self.prog}: {message}") + "\n")
        raise SystemExit(2)
