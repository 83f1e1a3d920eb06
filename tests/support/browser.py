"""A real headless Chromium, driven over the Chrome DevTools Protocol with aiohttp.

Only what the browser tests need: open a URL, evaluate JavaScript, press
keys. The terminal textual-serve draws is an xterm.js canvas, so its text is
read from the xterm ``Terminal`` object itself: a script installed before any
page script runs notes the object when the page assigns it (``this.terminal
= new Terminal(…)``), and ``screen()`` reads its buffer line by line.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-port=0", "--window-size=1280,900",
)  # fmt: skip
WAIT_S = 30.0

#: Runs before the page's own scripts: keeps the xterm Terminal the page creates.
CAPTURE_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {
      value, writable: true, configurable: true, enumerable: true,
    });
    if (value && value.buffer && value.buffer.active) window.__hzTerminal = value;
  },
});
"""
SCREEN = """
(() => {
  const term = window.__hzTerminal;
  if (!term) return "";
  const buffer = term.buffer.active, lines = [];
  for (let row = 0; row < buffer.length; row++) {
    const line = buffer.getLine(row);
    lines.push(line ? line.translateToString(true) : "");
  }
  return lines.join("\\n");
})()
"""
#: Key events as Chromium takes them: (key, code, Windows virtual key code, text).
KEYS = {"F4": ("F4", "F4", 115, ""), "a": ("a", "KeyA", 65, "a")}


def chromium() -> str | None:
    """The Chromium binary, if installed (``.ci/run`` installs Debian's ``chromium``)."""
    return CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")


class Page:
    """One tab, over its DevTools websocket."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for message in self.socket:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = message.json()
            waiter = self._waiting.pop(data.get("id", -1), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(data)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = waiter
        await self.socket.send_json({"id": ident, "method": method, "params": params})
        answer = await asyncio.wait_for(waiter, WAIT_S)
        if "error" in answer:
            raise AssertionError(f"{method}: {answer['error']}")
        return dict(answer["result"])

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    async def screen(self) -> str:
        return str(await self.evaluate(SCREEN))

    async def wait_for(self, check: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT_S
        while True:
            shown = await self.screen()
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n{shown}")
            await asyncio.sleep(0.2)

    async def press(self, name: str) -> None:
        """One key, down then up, to whatever has the focus (the terminal's input)."""
        key, code, virtual, text = KEYS[name]
        down = {"type": "keyDown", "text": text} if text else {"type": "rawKeyDown"}
        common = {"key": key, "code": code, "windowsVirtualKeyCode": virtual}
        await self.send("Input.dispatchKeyEvent", **down, **common)
        await self.send("Input.dispatchKeyEvent", type="keyUp", **common)
        await asyncio.sleep(0.3)

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self.socket.close()


@contextlib.asynccontextmanager
async def headless(binary: str, profile: Path) -> AsyncIterator[Page]:
    """Chromium on a throwaway profile, one blank tab; the whole browser is killed after.

    The browser is a tool of the test, not code under it: it runs on the real
    clock, outside CI's shifted-clock preload (under which it hangs).
    """
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and "FAKETIME" not in k}
    process = subprocess.Popen(
        [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        async with aiohttp.ClientSession() as http:
            port = await _devtools_port(profile, process)
            async with http.get(f"http://127.0.0.1:{port}/json/list") as answer:
                targets = await answer.json()
            tab = next(t for t in targets if t["type"] == "page")
            socket = await http.ws_connect(tab["webSocketDebuggerUrl"], max_msg_size=0)
            page = Page(socket)
            try:
                await page.send("Page.enable")
                await page.send("Page.addScriptToEvaluateOnNewDocument", source=CAPTURE_TERMINAL)
                yield page
            finally:
                await page.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


async def _devtools_port(profile: Path, process: subprocess.Popen[bytes]) -> int:
    """The port Chromium picked, from the ``DevToolsActivePort`` file it writes in its profile."""
    deadline = time.monotonic() + WAIT_S
    written = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"chromium exited at start (status {process.returncode})")
        with contextlib.suppress(FileNotFoundError, ValueError, IndexError):
            return int(written.read_text().splitlines()[0])
        await asyncio.sleep(0.1)
    raise AssertionError("chromium did not open its DevTools port")
