"""``HZ_CRASH_AT``: kill this process right after a named point is durable.

Crash tests name the point instead of guessing timings. A point is an event
kind (``turn.started``), an event kind with its step (``step.done:think``)
or a named moment between writes (``effect:before-done``, ``tool:before-result``);
``staged:`` before a kind (``staged:effect.done``) is the moment that event is
staged for a group commit, not durable yet. Several points
may be given, comma separated; ``HZ_CRASH_AT_COUNT=n`` crashes at the n-th
time a point is reached (default the first).
"""

from __future__ import annotations

import os
import signal

_reached: dict[str, int] = {}


def _armed() -> frozenset[str]:
    raw = os.environ.get("HZ_CRASH_AT", "")
    return frozenset(point.strip() for point in raw.split(",") if point.strip())


ARMED = _armed()
"""The points armed in this process, read once at import: crash tests arm a process they
start, and every spine line asks (a hot caller tests ``if ARMED`` before calling)."""


def reached(*names: str) -> None:
    """Call after a point is durable; SIGKILLs the process when the point is armed."""
    if not ARMED:
        return
    for name in names:
        if name in ARMED:
            _reached[name] = _reached.get(name, 0) + 1
            if _reached[name] >= int(os.environ.get("HZ_CRASH_AT_COUNT", "1")):
                os.kill(os.getpid(), signal.SIGKILL)
