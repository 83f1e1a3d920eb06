"""The environment of every ``hz`` process a test starts.

A knob the run inherited (a developer's ``HZ_HOME`` or ``HZ_NOW``, a
``HZ_MODEL_DELAY_MS`` set by another test's ``monkeypatch``) must never
reach a test's ``hz``: each one is dropped, and only what the test names is
set. The CLI stays embedded (``HZ_EMBEDDED=1``) unless the test is about the
daemon by default and asks for ``embedded=False``.
"""

from __future__ import annotations

import os
from pathlib import Path


def hz_env(
    home: Path | str | None = None, *, embedded: bool = True, **knobs: str
) -> dict[str, str]:
    """This process's environment without any ``HZ_*`` variable, then ``HZ_HOME=home``,
    ``HZ_EMBEDDED=1`` (unless ``embedded`` is false) and ``knobs``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HZ_")}
    if home is not None:
        env["HZ_HOME"] = str(home)
    if embedded:
        env["HZ_EMBEDDED"] = "1"
    return env | knobs
