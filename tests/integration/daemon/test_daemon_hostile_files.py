"""issue 13 (the daemon by default, restart as started): hostile files in the home.

A tampered ``daemon.start.json`` never chooses what a restart runs, and the
daemon's own files (``daemon.json``, ``daemon.log``, ``kernel.lock``, ``daemon.sock``) that are
FIFOs or directories give one coded line at once, never a hang or a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.integration.daemon.daemon_helpers import (
    HZ,
    Daemons,
    discovery,
    hz,
    make_home,
    one_coded_line,
)

#: A command that would hang on a FIFO is cut off well before this.
QUICK_S = 30


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_issue13_restart_never_runs_the_program_a_tampered_start_record_names(
    tmp_path: Path, daemons: Daemons
) -> None:
    home = make_home(tmp_path / "home", heinzels=0)
    first = daemons.start(home, env={"HZ_TICK_SECONDS": "7"})
    record_path = home.root / "daemon.start.json"
    record = json.loads(record_path.read_text())
    marker = tmp_path / "ran"
    record["argv"] = ["/bin/sh", "-c", f"touch {marker}", "--foreground"]
    record["env"] |= {"HZ_EVIL_WAS_HERE": "1", "LD_LIBRARY_PATH": "/nowhere", "X_TOKEN": "t"}
    record_path.write_text(json.dumps(record))
    restarted = subprocess.run(
        [*HZ, "daemon", "restart", "--json"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "HZ_HOME": str(home.root)},
    )  # fmt: skip
    assert restarted.returncode == 0, restarted.stderr
    report = json.loads(restarted.stdout)
    daemons.track(report["pid"])
    assert not marker.exists()
    assert report["stopped"] == first["pid"] and report["tick_seconds"] == 7
    argv = Path(f"/proc/{report['pid']}/cmdline").read_bytes().split(b"\0")
    assert b"hz_kernel.cli" in argv and b"/bin/sh" not in argv
    environ = _environ(report["pid"])
    assert "LD_LIBRARY_PATH" not in environ or environ["LD_LIBRARY_PATH"] != "/nowhere"
    assert "X_TOKEN" not in environ
    assert hz(home.root, "daemon", "stop").returncode == 0


def _odd(path: Path, kind: str) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


@pytest.mark.parametrize("kind", ["fifo", "directory"])
@pytest.mark.parametrize("name", ["kernel.lock", "daemon.log", "daemon.json", "daemon.start.lock"])
def test_issue13_an_odd_daemon_file_is_one_coded_line_never_a_hang(
    tmp_path: Path, daemons: Daemons, name: str, kind: str
) -> None:
    """A daemon file that is a FIFO or a directory: start, a write and logs refuse or work,
    each at once, with one coded line naming the file (HZS090) and no traceback."""
    home = make_home(tmp_path / "home", heinzels=1)
    _odd(home.root / name, kind)
    commands = [("daemon", "start"), ("heinzel", "pause", "h0")]
    if name == "daemon.log":
        commands.append(("daemon", "logs"))
    for args in commands:
        result = hz(home.root, *args, timeout=QUICK_S)
        if result.returncode == 0:
            assert "Traceback" not in result.stderr, result.stderr
            continue
        line = one_coded_line(result, "HZS090")
        assert str(home.root / name) in line
    if (home.root / "daemon.json").is_file():
        daemons.track(discovery(home).pid)
    assert hz(home.root, "daemon", "stop", timeout=QUICK_S).returncode == 0


def test_issue13_item4_restart_after_a_crash_keeps_the_settings_it_was_started_with(
    tmp_path: Path, daemons: Daemons
) -> None:
    """A daemon SIGKILLed (before or during ``hz daemon restart``) comes back as it was started."""
    home = make_home(tmp_path / "home", heinzels=0)
    first = daemons.start(home, env={"HZ_TICK_SECONDS": "7"})
    os.kill(first["pid"], signal.SIGKILL)
    restarted = subprocess.run(
        [*HZ, "daemon", "restart", "--json"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "HZ_HOME": str(home.root)},
    )  # fmt: skip
    assert restarted.returncode == 0, restarted.stderr
    report = json.loads(restarted.stdout)
    daemons.track(report["pid"])
    assert report["pid"] != first["pid"] and report["tick_seconds"] == 7
    assert hz(home.root, "daemon", "stop").returncode == 0


def test_s11_a_directory_where_the_unix_socket_goes_is_one_coded_line(
    tmp_path: Path, daemons: Daemons
) -> None:
    """``unix_socket = true`` and a directory at ``daemon.sock``: HZS090 naming it, not an
    internal error; a FIFO there is a previous daemon's leftover, replaced."""
    home = make_home(tmp_path / "home", heinzels=1, daemon={"unix_socket": True})
    (home.root / "daemon.sock").mkdir()
    (home.root / "daemon.sock" / "kept").write_text("kept")
    line = one_coded_line(hz(home.root, "daemon", "start", timeout=QUICK_S), "HZS090")
    assert str(home.root / "daemon.sock") in line
    assert (home.root / "daemon.sock" / "kept").read_text() == "kept"
    (home.root / "daemon.sock" / "kept").unlink()
    (home.root / "daemon.sock").rmdir()
    os.mkfifo(home.root / "daemon.sock")
    daemons.start(home)
    assert hz(home.root, "heinzel", "list", timeout=QUICK_S).returncode == 0
    assert hz(home.root, "daemon", "stop", timeout=QUICK_S).returncode == 0
