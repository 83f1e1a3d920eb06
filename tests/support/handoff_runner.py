"""A scripted coding agent runner for the handoff tests: ``python handoff_runner.py MODE MARKS``.

Every start appends ``started <pid>`` to MARKS, so a test counts how often it
ran. It reads the task on stdin and, by MODE:

- ``report``: prints two lines of work naming the task, its report, and a
  cost line last (``{"usd": 0.25, "tokens": 1200}``); exits 0.
- ``fail``: prints a line, says why on stderr and exits 3.
- ``claude``: prints JSON lines as Claude Code's ``--output-format stream-json``
  does, the last its ``result`` line with the report and the cost; exits 0.
- ``codex FILE TASK``: takes the task as an argument, prints progress and
  writes the report to FILE, as ``codex exec --output-last-message FILE``.
- ``flood``: prints ``FLOOD_LINES`` numbered lines, then its report; exits 0.
- ``hang``: prints a line, starts a child in its process group (``child <pid>``
  in MARKS), then waits until it is killed or the ``hz`` that started it is
  gone (a killed ``hz`` leaves them behind; they end themselves then), at
  most 60 s. The child watches ``hz`` too, not the runner: it outlives the
  runner unless its whole process group is ended.

Standalone (no imports from the project): hz runs it in the working directory
the call names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

WORK_LINE = "runner: working on the task in the notes folder"
REPORT = "Done: renamed the heading and added a summary line."
COST = '{"usd": 0.25, "tokens": 1200}'
FLOOD_LINES = 5000
#: Waits while the process ``watched`` lives (60 s at most).
WAIT = """
import os, time
end = time.monotonic() + 60
while time.monotonic() < end:
    try:
        os.kill(watched, 0)
    except ProcessLookupError:
        break
    time.sleep(0.05)
"""


def main(mode: str, marks: str, *rest: str) -> int:
    with open(marks, "a", encoding="utf-8") as out:
        out.write(f"started {os.getpid()}\n")
    task = rest[1] if mode == "codex" else sys.stdin.read()
    if mode == "claude":
        print(json.dumps({"type": "system", "subtype": "init", "cwd": os.getcwd()}))
        print(json.dumps({"type": "assistant", "message": {"content": [{"text": WORK_LINE}]}}))
        usage = {"input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 300}
        result = {"type": "result", "subtype": "success", "result": REPORT}
        print(json.dumps({**result, "total_cost_usd": 0.31, "usage": usage}))
        return 0
    print(WORK_LINE, flush=True)
    if mode == "codex":
        print(f"runner: the task was {task.splitlines()[0]}")
        with open(rest[0], "w", encoding="utf-8") as report:
            report.write(REPORT + "\n")
        return 0
    if mode == "report":
        print(f"runner: the task was {len(task)} characters: {task.splitlines()[0]}")
        print(REPORT)
        print(COST)
        return 0
    if mode == "fail":
        print("cannot write to the repository", file=sys.stderr)
        return 3
    if mode == "forks":  # starts something that keeps its output open, then is done
        subprocess.Popen([sys.executable, "-c", f"watched = {os.getppid()}\n{WAIT}"])
        print(REPORT, flush=True)
        return 0
    if mode == "flood":
        for number in range(FLOOD_LINES):
            print(f"line {number:05d} of the flood")
        print(REPORT)
        return 0
    hz = os.getppid()
    child = subprocess.Popen([sys.executable, "-c", f"watched = {hz}\n{WAIT}"])
    with open(marks, "a", encoding="utf-8") as out:
        out.write(f"child {child.pid}\n")
    exec(WAIT, {"watched": hz})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
