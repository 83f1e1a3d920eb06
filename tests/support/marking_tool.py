"""A tool that is not replay-safe, for the crash tests: each run appends one line to a file.

No built-in tool has an effect, so the unsafe path is proven with this one,
registered through the public registry. ``python -m tests.support.marking_tool
ARGS`` is ``hz ARGS`` with the tool registered, so a real ``hz`` process can be
killed while the tool runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hz_kernel.engine.tools import TOOLS, Grant, ToolArgs, ToolSpec

NAME = "mark"


class MarkArgs(ToolArgs):
    file: str


def _mark(args: ToolArgs, grant: Grant) -> str:
    """Append one line to a file under a granted folder: an effect a second run would repeat."""
    assert isinstance(args, MarkArgs)
    path = grant.file_or_folder(args.file)
    with Path(path).open("a", encoding="utf-8") as out:
        out.write("marked\n")
    return "marked"


MARK = ToolSpec(
    name=NAME,
    capability="files:read",
    description="Append a line to a file (a test's tool with an effect).",
    args=MarkArgs,
    run=_mark,
    replay_safe=False,
)

if __name__ == "__main__":
    from hz_kernel.cli import main

    TOOLS.register(MARK)
    raise SystemExit(main(sys.argv[1:]))
