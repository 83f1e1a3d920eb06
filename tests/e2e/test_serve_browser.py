"""Issue 13 item 6: ``hz serve`` gives the cockpit to a browser, on loopback, behind one login.

The real ``hz serve`` adopts or starts the home's daemon and prints a
one-time login URL. A real headless Chromium (driven over the DevTools
Protocol) opens it, sees the home table drawn by the cockpit process
textual-serve runs for its tab, and approves the pending draft with F4 and
``a``; the approval is read back from the heinzel's spine. Without the
session cookie nothing is served, the login URL works once, and a foreign
``Host`` or ``Origin`` is refused.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest

from tests.support import browser
from tests.support.drafted import DRAFTED_AT, build_drafted
from tests.support.env import hz_env

HZ = Path(sys.executable).parent / "hz"
WAIT_S = 30.0


@dataclass
class Serving:
    process: subprocess.Popen[str]
    login_url: str

    @property
    def netloc(self) -> str:
        return urlsplit(self.login_url).netloc

    @property
    def login_path(self) -> str:
        parts = urlsplit(self.login_url)
        return f"{parts.path}?{parts.query}"

    def get(self, path: str, **headers: str) -> tuple[int, dict[str, str], str]:
        """One plain HTTP GET, with exactly the headers given (``Host`` included)."""
        connection = http.client.HTTPConnection(self.netloc, timeout=WAIT_S)
        try:
            connection.putrequest("GET", path, skip_host="Host" in headers)
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders()
            answer = connection.getresponse()
            return answer.status, dict(answer.getheaders()), answer.read().decode()
        finally:
            connection.close()


def _cockpits(home: Path) -> list[int]:
    """The browser sessions' cockpit processes of ``home`` (read from /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if b"hz_tui" in argv and str(home).encode() in argv and state != "Z":
            pids.append(int(entry.name))
    return pids


def _login_url(process: subprocess.Popen[str]) -> str:
    """The login line ``hz serve`` prints once it listens (read unbuffered, so select is true)."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    deadline = time.monotonic() + WAIT_S
    said = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            said += chunk
            for line in said.decode().splitlines():
                if "/login?once=" in line:
                    return line.strip()
    raise AssertionError(f"hz serve printed no login URL: {said!r}")


@contextlib.contextmanager
def serving(home: Path, env: dict[str, str], nofile: int | None = None) -> Iterator[Serving]:
    """``hz serve`` on ``home`` (``nofile``: its limit of open files); stopped after, with its
    daemon and any cockpit left behind."""

    def limited() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    process = subprocess.Popen(
        [str(HZ), "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=limited,
    )
    try:
        yield Serving(process, _login_url(process))
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for pid in _cockpits(home):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        subprocess.run(
            [str(HZ), "daemon", "stop"], env=env, capture_output=True, timeout=60, check=False
        )


def _env(home: Path) -> dict[str, str]:
    knobs = {"HZ_NOW": DRAFTED_AT, "HZ_TICK_SECONDS": "3600", "PYDANTIC_AI_NO_BANNER": "1"}
    return hz_env(home, embedded=False, **knobs)


async def test_a_browser_logs_in_sees_the_home_table_and_approves_a_draft(tmp_path: Path) -> None:
    """Issue 13 item 6: headless Chromium logs in once, sees the home table, approves the draft."""
    binary = browser.chromium()
    if binary is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    world = build_drafted(tmp_path / "world")
    key = world.draft_key()
    assert "DRAFT" in world.document.read_text()
    token_seen: list[str] = []
    with serving(world.home, _env(world.home)) as served:
        token_seen.append(orjson.loads((world.home / "daemon.json").read_bytes())["token"])
        profile = tmp_path / "profile"
        async with browser.headless(binary, profile) as page:
            await page.send("Page.navigate", url=served.login_url)
            shown = await page.wait_for(lambda s: "dig" in s and "draft" in s, "the home table")
            assert await page.evaluate("location.pathname") == "/"
            assert await page.evaluate("document.cookie") == "", "the session is HttpOnly"
            html = await page.evaluate("document.documentElement.outerHTML")
            assert token_seen[0] not in html and token_seen[0] not in served.login_url
            await page.evaluate("window.__hzTerminal.focus()")
            await page.press("F4")
            await page.wait_for(lambda s: "draft 1 of 1" in s, "the review queue")
            await page.press("a")
            shown = await page.wait_for(lambda s: "draft approved" in s, "the approval")
            assert "nothing waits for review" in shown
        approved = [e for e in world.events() if e["kind"] == "approval.observed"]
        assert [e["data"]["key"] for e in approved] == [key]  # type: ignore[index]
        assert "DRAFT" not in world.document.read_text(), "the tag line is gone"
        status, _, body = served.get(served.login_path, Host=served.netloc)
        assert status == 403 and body.startswith("HZD132: "), "the login URL works once"
    assert _cockpits(world.home) == [], "stopping hz serve ends its browser sessions"


def test_without_the_session_nothing_is_served(tmp_path: Path) -> None:
    """Issue 13 item 6: no cookie, no page; the login URL works once; foreign Host/Origin → 403."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with serving(home, _env(home)) as served:
        here = served.netloc
        for path in ("/", "/static/js/textual.js", "/ws", "/download/x"):
            status, _, body = served.get(path, Host=here)
            assert (status, body.split(":")[0]) == (401, "HZD131"), path
        status, _, body = served.get(served.login_path, Host=f"evil.example:{here.split(':')[1]}")
        assert (status, body.split(":")[0]) == (403, "HZD133")
        status, headers, _ = served.get(served.login_path, Host=here)
        assert status == 303 and headers["Location"] == "/"
        cookie = headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        session = cookie.split(";")[0]
        status, _, body = served.get(served.login_path, Host=here)
        assert (status, body.split(":")[0]) == (403, "HZD132"), "the code is spent"
        status, headers, page = served.get("/", Host=here, Cookie=session)
        assert status == 200 and f"ws://{here}/ws" in page
        policy = headers["content-security-policy"]
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
        token = orjson.loads((home / "daemon.json").read_bytes())["token"]
        assert token not in page
        status, _, _ = served.get("/static/js/textual.js", Host=here, Cookie=session)
        assert status == 200
        status, _, body = served.get("/", Host="localhost.evil.example", Cookie=session)
        assert (status, body.split(":")[0]) == (403, "HZD133")
        other_port = f"http://127.0.0.1:{int(here.split(':')[1]) ^ 1}"
        status, _, body = served.get("/ws", Host=here, Cookie=session, Origin=other_port)
        assert (status, body.split(":")[0]) == (403, "HZD134")
        status, _, body = served.get("/", Host=here, Cookie="hz_session_1=forged")
        assert (status, body.split(":")[0]) == (401, "HZD131")


def test_serve_refuses_a_non_loopback_host(tmp_path: Path) -> None:
    """Issue 13 item 6: ``hz serve`` binds loopback only, like the daemon (one coded line)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    result = subprocess.run(
        [str(HZ), "serve", "--host", "0.0.0.0"],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("HZD130: --host 0.0.0.0: ") and "Traceback" not in result.stderr
    assert not (home / "daemon.json").exists(), "nothing started for a refused address"


def test_serve_refuses_a_taken_port_before_starting_anything(tmp_path: Path) -> None:
    """Issue 13 item 6: a port already in use is one coded line, and no daemon is started."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [str(HZ), "serve", "--port", str(port)],
            env=_env(home),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr.startswith(f"HZD135: 127.0.0.1:{port}: cannot listen")
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
    assert not (home / "daemon.json").exists()


def test_idle_and_slow_connections_cannot_starve_the_page(tmp_path: Path) -> None:
    """The attack pass: 400 connections that never send a request, under ``ulimit -n 256``,
    left ``hz serve`` unable to accept the page's request for over a minute. Now connections
    that owe a request are capped and cut, oldest first; the page still answers at once."""
    world = build_drafted(tmp_path / "world")
    with serving(world.home, _env(world.home), nofile=256) as served:
        host, port = served.netloc.rsplit(":", 1)
        hogs: list[socket.socket] = []
        try:
            for n in range(400):
                hog = socket.create_connection((host, int(port)), timeout=WAIT_S)
                if n % 4 == 0:
                    hog.sendall(b"GET / HTTP/1.1\r\nHost: ")  # a request that never ends
                hogs.append(hog)
            started = time.monotonic()
            status, _, _ = served.get("/", Host=served.netloc)
            assert status == 401
            assert time.monotonic() - started < 10.0
            status, headers, _ = served.get(served.login_path, Host=served.netloc)
            assert status == 303 and "set-cookie" in {k.lower() for k in headers}
        finally:
            for hog in hogs:
                hog.close()
