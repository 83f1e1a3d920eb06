"""Where the daemon logs, and who supervises it.

The daemon logs through Python logging. Where to depends on how it runs:

* under systemd (``INVOCATION_ID`` is set): to stderr, which systemd sends
  to the journal; the journal rotates it (``journalctl --user -u UNIT``);
* in the foreground of a terminal: to stderr, for the person watching;
* otherwise (detached by ``hz daemon start``, under launchd, redirected
  by hand): to ``<home>/daemon.log``, rotated at ``[daemon] log_max_bytes``,
  keeping ``log_files`` older files ``daemon.log.1..N`` (all 0600).

A detached daemon's stdout and stderr are the log file itself, opened by
its launcher, so whatever is written before logging is set up (a coded
start error, a crash) lands there too. After each rotation they are
pointed at the fresh file, so nothing keeps writing into a rotated one.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from pathlib import Path
from typing import Literal, TextIO

from hz_kernel.config import DaemonSettings
from hz_kernel.home import Home
from hz_kernel.logfiles import log_path
from hz_kernel.store.fsutil import FILE_MODE, open_regular

Supervisor = Literal["systemd", "launchd"]
#: The unit ``hz daemon install`` writes, and the one assumed when the cgroup names none.
SYSTEMD_UNIT = "hz-daemon.service"
#: The launchd label ``hz daemon install`` writes.
LAUNCHD_LABEL = "dev.hz.daemon"
#: What a service manager sets in its service's environment; a launcher never passes these
#: on to a daemon it spawns detached, which no service manager supervises.
SUPERVISOR_ENV = ("INVOCATION_ID", "JOURNAL_STREAM", "XPC_SERVICE_NAME")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def supervisor(environ: dict[str, str] | None = None) -> tuple[Supervisor, str] | None:
    """The service manager running this process and its unit or label, if any."""
    env = os.environ if environ is None else environ
    if env.get("INVOCATION_ID"):
        return "systemd", _systemd_unit() or SYSTEMD_UNIT
    label = env.get("XPC_SERVICE_NAME", "")
    if label and label != "0":
        return "launchd", label
    return None


def _systemd_unit() -> str | None:
    """The ``.service`` this process runs in, from its cgroup (Linux)."""
    try:
        groups = Path("/proc/self/cgroup").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in groups.splitlines():
        for part in reversed(line.rsplit(":", 1)[-1].split("/")):
            if part.endswith(".service"):
                return part
    return None


class RotatingLog(logging.handlers.RotatingFileHandler):
    """A size-rotated log file, private (0600), optionally carrying stdout/stderr along.

    With ``carry_stdio`` the process's stdout and stderr are pointed at each
    fresh file after a rotation, so that output from outside logging (a
    traceback, a library's print) follows the log instead of the rotated file.
    """

    def __init__(self, path: Path, max_bytes: int, keep: int, *, carry_stdio: bool) -> None:
        self.carry_stdio = carry_stdio
        super().__init__(path, maxBytes=max_bytes, backupCount=keep, encoding="utf-8")

    def _open(self) -> TextIO:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        fd = open_regular(Path(self.baseFilename), flags, FILE_MODE)
        return open(fd, "a", encoding="utf-8", errors="backslashreplace")

    def doRollover(self) -> None:
        super().doRollover()
        if self.carry_stdio and self.stream is not None:
            for std in (sys.stdout, sys.stderr):
                std.flush()
            fd = self.stream.fileno()
            os.dup2(fd, 1)
            os.dup2(fd, 2)


def _is_file(fd: int, path: Path) -> bool:
    try:
        mine, theirs = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def setup(home: Home, settings: DaemonSettings) -> str:
    """Send the daemon's log where it belongs (see the module); returns where, for the log."""
    root = logging.getLogger()
    if root.handlers:
        return "the handlers already set up"
    root.setLevel(logging.INFO)
    watched = supervisor()
    if (watched is not None and watched[0] == "systemd") or sys.stderr.isatty():
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        where = "the journal (stderr)" if watched else "stderr"
    else:
        path = log_path(home.root)
        carry = _is_file(2, path)
        handler = RotatingLog(path, settings.log_max_bytes, settings.log_files, carry_stdio=carry)
        where = str(path)
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    return where


def stderr_is_logged(home: Home) -> bool:
    """True when what this process writes to stderr already lands in its log (or journal),
    so a coded line printed there need not be logged a second time."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, RotatingLog):
            return handler.carry_stdio
        if isinstance(handler, logging.StreamHandler):
            return True
    return _is_file(2, log_path(home.root))
