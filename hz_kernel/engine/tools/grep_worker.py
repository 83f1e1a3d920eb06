"""The search tool's matching, run as its own process so a deadline can stop it.

Python's ``re`` cannot be interrupted, and a pattern that backtracks badly
(``(a|aa)+$`` over a long line) holds the interpreter for minutes; in the
kernel's process that would stall every heinzel. The kernel reads the
files (bounded, refusing what it must) and sends their lines here as JSON
on stdin: ``{"pattern", "max_hits", "files": [[shown path, text], ...]}``;
this prints the hits as a JSON list and exits. Standard library only, run
with ``python -I``, so it starts in milliseconds.
"""

from __future__ import annotations

import json
import re
import sys

#: Characters of a line that are matched and shown (the rest is cut).
MAX_LINE_CHARS = 400


def matches(request: dict[str, object]) -> list[str]:
    """``path:line: text`` for each matching line, in the order given, up to ``max_hits``
    (then a line saying it stopped)."""
    pattern = re.compile(str(request["pattern"]))
    limit = int(str(request["max_hits"]))
    hits: list[str] = []
    for shown, text in request["files"]:  # type: ignore[attr-defined]
        for number, line in enumerate(str(text).splitlines(), 1):
            clipped = line[:MAX_LINE_CHARS]
            if pattern.search(clipped):
                hits.append(f"{shown}:{number}: {clipped}")
                if len(hits) >= limit:
                    hits.append(f"[hz: stopped at {limit} hits]")
                    return hits
    return hits


if __name__ == "__main__":
    json.dump(matches(json.load(sys.stdin)), sys.stdout)
