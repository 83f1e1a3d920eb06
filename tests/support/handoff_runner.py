"""A scripted coding agent runner for the handoff tests: ``python handoff_runner.py MODE MARKS``.

Every start appends ``started <pid>`` to MARKS, so a test counts how often it
ran. It reads the task on stdin and, by MODE:

- ``report``: prints two lines of work naming the task, its report, and a
  cost line last (``{"usd": 0.25, "tokens": 1200}``); exits 0.
- ``fail``: prints a line, says why on stderr and exits 3.
- ``hang``: prints a line, then waits until it is killed or its parent dies
  (a killed ``hz`` leaves it behind; it ends itself then), at most 60 s.

Standalone (no imports from the project): hz runs it in the working directory
the call names.
"""

from __future__ import annotations

import os
import sys
import time

WORK_LINE = "runner: working on the task in the notes folder"
REPORT = "Done: renamed the heading and added a summary line."
COST = '{"usd": 0.25, "tokens": 1200}'


def main(mode: str, marks: str) -> int:
    with open(marks, "a", encoding="utf-8") as out:
        out.write(f"started {os.getpid()}\n")
    task = sys.stdin.read()
    print(WORK_LINE, flush=True)
    if mode == "report":
        print(f"runner: the task was {len(task)} characters: {task.splitlines()[0]}")
        print(REPORT)
        print(COST)
        return 0
    if mode == "fail":
        print("cannot write to the repository", file=sys.stderr)
        return 3
    parent = os.getppid()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and os.getppid() == parent:
        time.sleep(0.05)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
