"""The daemon as a user service: ``hz daemon install|uninstall`` and restarting through it.

Linux gets a systemd user unit (``$XDG_CONFIG_HOME/systemd/user/hz-daemon.service``),
macOS a launchd agent (``~/Library/LaunchAgents/dev.hz.daemon.plist``). Both
run this very hz (``ExecStart``/``ProgramArguments``) on the home it was
installed for, with restart on failure. A daemon a service manager runs
records so in ``daemon.json`` (``logs.supervisor``), and a restart of it goes
through that manager (``systemctl --user restart``, ``launchctl kickstart -k``)
instead of stopping and spawning one behind its back.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import escape, unescape

from hz_kernel.daemon.logs import LAUNCHD_LABEL, SYSTEMD_UNIT
from hz_kernel.errors import HzError, UsageError
from hz_kernel.home import Home
from hz_kernel.logfiles import log_path
from hz_kernel.store.fsutil import open_regular

Manager = Literal["systemd", "launchd"]
COMMAND_TIMEOUT_S = 60.0


def default_manager() -> Manager:
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform.startswith("linux"):
        return "systemd"
    raise UsageError(
        "HZD154", "no service manager hz knows on this system (systemd or launchd)", sys.platform
    )


def hz_command() -> list[str]:
    """How to run this very hz: its console script when that is what runs, else the module."""
    script = Path(sys.argv[0])
    if script.name == "hz" and script.is_file():
        return [str(script.resolve())]
    return [sys.executable, "-m", "hz_kernel.cli"]


def daemon_argv(home: Home) -> list[str]:
    return [*hz_command(), "--home", str(home.root), "daemon", "start", "--foreground"]


@dataclass(frozen=True)
class ServiceFile:
    """A unit or agent file: where it goes, what it says, and how to switch it on and off."""

    manager: Manager
    path: Path
    text: str
    enable: list[list[str]]
    disable: list[list[str]]


def _systemd_quote(arg: str) -> str:
    escaped = arg.replace("%", "%%")
    if any(c in escaped for c in ' \t"\\'):
        return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return escaped


def systemd_unit(home: Home) -> ServiceFile:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    path = Path(config) / "systemd" / "user" / SYSTEMD_UNIT
    exec_start = " ".join(_systemd_quote(arg) for arg in daemon_argv(home))
    text = f"""# Written by `hz daemon install`; `hz daemon uninstall` removes it.
[Unit]
Description=hz daemon (the kernel of the hz home {home.root})
After=default.target

[Service]
Type=simple
ExecStart={exec_start}
Environment={_systemd_quote(f"HZ_HOME={home.root}")}
Environment=PYTHONUNBUFFERED=1
Restart=on-failure
RestartSec=5
KillSignal=SIGTERM
TimeoutStopSec=30
UMask=0077
NoNewPrivileges=yes

[Install]
WantedBy=default.target
"""
    user = ["systemctl", "--user"]
    return ServiceFile(
        manager="systemd",
        path=path,
        text=text,
        enable=[[*user, "daemon-reload"], [*user, "enable", "--now", SYSTEMD_UNIT]],
        disable=[[*user, "disable", "--now", SYSTEMD_UNIT], [*user, "daemon-reload"]],
    )


def launchd_agent(home: Home) -> ServiceFile:
    path = Path.home() / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    args = "\n".join(f"    <string>{escape(arg)}</string>" for arg in daemon_argv(home))
    log = escape(str(log_path(home.root)))
    text = f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by `hz daemon install`; `hz daemon uninstall` removes it. -->
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{LAUNCHD_LABEL}</string>
  <key>ProgramArguments</key>
  <array>
{args}
  </array>
  <key>EnvironmentVariables</key>
  <dict>
    <key>HZ_HOME</key>
    <string>{escape(str(home.root))}</string>
    <key>PYTHONUNBUFFERED</key>
    <string>1</string>
  </dict>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>StandardOutPath</key>
  <string>{log}</string>
  <key>StandardErrorPath</key>
  <string>{log}</string>
  <key>ProcessType</key>
  <string>Background</string>
  <key>Umask</key>
  <integer>63</integer>
  <key>ExitTimeOut</key>
  <integer>30</integer>
</dict>
</plist>
"""
    domain = f"gui/{os.getuid()}"
    return ServiceFile(
        manager="launchd",
        path=path,
        text=text,
        enable=[["launchctl", "bootstrap", domain, str(path)]],
        disable=[["launchctl", "bootout", f"{domain}/{LAUNCHD_LABEL}"]],
    )


def service_file(home: Home, manager: Manager | None = None) -> ServiceFile:
    chosen = manager or default_manager()
    return systemd_unit(home) if chosen == "systemd" else launchd_agent(home)


def run_manager(argv: list[str]) -> None:
    """Run one systemctl/launchctl command; a coded error when it is missing or fails."""
    if shutil.which(argv[0]) is None:
        raise HzError("HZD150", f"{argv[0]} is not available here", " ".join(argv))
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HzError(
            "HZD151", f"{argv[0]} failed ({type(exc).__name__})", " ".join(argv)
        ) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        reason = f": {said[-1][:200]}" if said else ""
        raise HzError(
            "HZD151", f"{argv[0]} exited with status {done.returncode}{reason}", " ".join(argv)
        )


def restart_command(supervisor: str, unit: str | None) -> list[str]:
    """The service manager's own restart of the daemon's unit or label."""
    if supervisor == "systemd":
        return ["systemctl", "--user", "restart", unit or SYSTEMD_UNIT]
    return ["launchctl", "kickstart", "-k", f"gui/{os.getuid()}/{unit or LAUNCHD_LABEL}"]


def installed_home(found: ServiceFile) -> str | None:
    """The home an existing unit or agent file serves, read back from its ``HZ_HOME``."""
    try:
        # A link is fine (dotfile managers make them); a FIFO in its place is refused at once.
        with os.fdopen(open_regular(found.path, os.O_RDONLY, follow=True), "rb") as handle:
            text = handle.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    marker = "HZ_HOME=" if found.manager == "systemd" else "<key>HZ_HOME</key>"
    _, seen, rest = text.partition(marker)
    if not seen:
        return None
    if found.manager == "systemd":
        return rest.split("\n", 1)[0].rstrip('"').replace("%%", "%")
    start = rest.find("<string>") + len("<string>")
    return unescape(rest[start : rest.find("</string>", start)])
