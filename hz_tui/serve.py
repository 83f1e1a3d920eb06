"""``hz serve``: the cockpit in a browser, on loopback, behind a one-time login.

``textual-serve`` runs one cockpit process per browser tab (``python -m
hz_tui --home H``), each attached to the home's daemon, which ``hz serve``
adopts or starts first. The page is guarded like the daemon's wire, and
more: every request (the page, its static files, the websocket, downloads)
must name this server in ``Host`` (``HZD133``), carry no foreign ``Origin``
(``HZD134``: only this server's own origin, since cookies do not tell ports
apart) and bring the session cookie (``HZD131``). The cookie is minted
once, by the login URL printed in the terminal; its code is then spent
(``HZD132``). The daemon's token never reaches the browser: the cockpit
processes read it from ``daemon.json`` as any local client does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hz_kernel.errors import HzError, UsageError
from hz_kernel.loopback import loopback_address

if TYPE_CHECKING:
    from aiohttp import web

    from hz_kernel.home import Home

#: Seconds an open browser session is given to close when ``hz serve`` stops.
SHUTDOWN_GRACE_S = 2.0
#: Connections waiting for a request (just accepted, or idle between requests): at most this
#: many, each for at most ``WAITING_TIMEOUT_S``, so that a local process holding sockets open
#: cannot use up this server's file descriptors and starve the page.
MAX_WAITING = 32
WAITING_TIMEOUT_S = 10.0
_REFUSED_HEADERS = {"content-type": "text/plain; charset=utf-8", "cache-control": "no-store"}


def loopback_host(host: str) -> str:
    """``host`` as an address to bind, when it is a loopback one (``HZD130`` otherwise)."""
    address = loopback_address(host)
    if address is None:
        raise UsageError("HZD130", "hz serve binds loopback addresses only", f"--host {host}")
    return address


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text!r} (0 to 65535; 0 picks a free one)")
    return port


class Gate:
    """Who may reach the server: this server's ``Host``, its own ``Origin``, the session cookie.

    One login code, one session: both are random and live only in this
    process's memory.
    """

    def __init__(self, hosts: frozenset[str], port: int) -> None:
        self.hosts = hosts
        self.origins = frozenset(f"http://{host}" for host in hosts)
        self.cookie = f"hz_session_{port}"
        self.code: str | None = secrets.token_urlsafe(24)
        self._session: str | None = None

    def login_path(self) -> str:
        return f"/login?once={self.code}"

    def refusal(self, request: web.Request) -> web.Response | None:
        """The response that refuses ``request``, or None when it may pass."""
        host = request.headers.get("host", "").lower()
        if host not in self.hosts:
            return _refused(403, "HZD133", "requests must name this server's loopback address")
        origin = request.headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return _refused(403, "HZD134", "cross-origin requests are refused")
        if request.path == "/login":
            return None
        given = request.cookies.get(self.cookie, "")
        if self._session is None or not hmac.compare_digest(given, self._session):
            return _refused(401, "HZD131", "no session: open the login URL that hz serve printed")
        return None

    async def login(self, request: web.Request) -> web.Response:
        """Spend the one-time code for a session cookie, then show the cockpit."""
        from aiohttp import web

        code, given = self.code, request.query.get("once", "")
        if code is None or not hmac.compare_digest(given, code):
            return _refused(
                403, "HZD132", "this login link is spent or wrong; restart hz serve for a new one"
            )
        self.code = None
        self._session = secrets.token_urlsafe(32)
        answer = web.HTTPSeeOther("/", headers={"cache-control": "no-store"})
        answer.set_cookie(self.cookie, self._session, path="/", httponly=True, samesite="Strict")
        return answer


def _refused(status: int, code: str, message: str) -> web.Response:
    from aiohttp import web

    return web.Response(status=status, text=f"{code}: {message}\n", headers=_REFUSED_HEADERS)


Handler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]


class WaitingConnections:
    """The connections that owe this server a request, oldest first.

    A connection waits from its accept until a request reaches the app, and
    again after each answer but a websocket's (a browser tab's session). Past
    ``limit`` the oldest waiting one is closed; a sweep closes those waiting
    longer than ``timeout``. A slow request (headers sent a byte at a time)
    never reaches the app, so it waits, and is cut like an idle one.
    """

    def __init__(self, limit: int = MAX_WAITING, timeout: float = WAITING_TIMEOUT_S) -> None:
        self.limit = limit
        self.timeout = timeout
        self._since: dict[asyncio.BaseTransport, float] = {}

    def waits(self, transport: asyncio.BaseTransport | None) -> None:
        if transport is None or transport.is_closing():
            return
        self._since.pop(transport, None)
        self._since[transport] = asyncio.get_running_loop().time()
        while len(self._since) > self.limit:
            self._cut(next(iter(self._since)))

    def served(self, transport: asyncio.BaseTransport | None) -> None:
        self._since.pop(transport, None)  # type: ignore[arg-type]

    def sweep(self) -> None:
        deadline = asyncio.get_running_loop().time() - self.timeout
        for transport, since in list(self._since.items()):
            if since > deadline:
                break
            self._cut(transport)

    def _cut(self, transport: asyncio.BaseTransport) -> None:
        self._since.pop(transport, None)
        transport.close()


class _Watched(asyncio.Protocol):
    """aiohttp's protocol for one connection, its accept and close told to ``waiting``."""

    def __init__(self, inner: asyncio.Protocol, waiting: WaitingConnections) -> None:
        self.inner = inner
        self.waiting = waiting
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.waiting.waits(transport)
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.waiting.served(self.transport)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def build_app(
    gate: Gate, command: str, waiting: WaitingConnections | None = None
) -> web.Application:
    """The ``textual-serve`` routes for ``command``, every one behind ``gate``; ``waiting``
    learns when a request arrives and when its answer leaves."""
    import aiohttp_jinja2
    import jinja2
    from aiohttp import web
    from textual_serve.server import Server

    served = Server(command, title="hz")

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if waiting is not None:
            waiting.served(request.transport)
        refused = gate.refusal(request)
        return refused if refused is not None else await handler(request)

    @aiohttp_jinja2.template("app_index.html")
    async def index(request: web.Request) -> dict[str, Any]:
        # Addresses from the request's own (checked) Host, so the websocket carries the cookie.
        return {
            "font_size": 16,
            "app_websocket_url": f"ws://{request.host}/ws",
            "config": {"static": {"url": f"http://{request.host}/static/"}},
            "application": {"name": "hz"},
        }

    async def protect(request: web.Request, response: web.StreamResponse) -> None:
        # Nothing but this server: no third-party fonts (the stock page asks Google for one),
        # no framing, no referrer that could carry the login code.
        response.headers.setdefault(
            "content-security-policy",
            f"default-src 'self'; connect-src 'self' ws://{request.host}; "
            "script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; font-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
        )
        response.headers.setdefault("x-frame-options", "DENY")
        response.headers.setdefault("referrer-policy", "no-referrer")
        if waiting is not None and response.status != 101:
            waiting.waits(request.transport)

    app = web.Application(middlewares=[guard])
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(served.templates_path))
    app.on_response_prepare.append(protect)
    app.add_routes(
        [
            web.get("/login", gate.login),
            web.get("/", index, name="index"),
            web.get("/ws", served.handle_websocket, name="websocket"),
            web.get("/download/{key}", served.handle_download, name="download"),
            web.static("/static", served.statics_path, name="static"),
        ]
    )
    return app


def _listen(host: str, port: int) -> tuple[socket.socket, frozenset[str], str]:
    """A listening socket, the ``Host`` values it answers to, and its address for people."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise HzError("HZD135", f"cannot listen ({exc.strerror})", f"{host}:{port}") from None
    sock.listen(128)
    port = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    return sock, frozenset({f"{shown}:{port}", f"localhost:{port}"}), f"http://{shown}:{port}"


def cockpit_command(home: Home) -> str:
    """The shell command of one browser session: the cockpit of ``home``, on its daemon."""
    return shlex.join([sys.executable, "-m", "hz_tui", "--home", str(home.root)])


async def cmd_serve(home: Home, args: argparse.Namespace) -> int:
    from hz_kernel.connect import ensure_daemon

    host = loopback_host(args.host)
    sock, hosts, address = _listen(host, args.port)  # a taken port starts nothing
    try:
        daemon = await ensure_daemon(home)
        gate = Gate(hosts, sock.getsockname()[1])
        banner = (
            f"{daemon}\nserving the cockpit at {address}; log in once with:\n"
            f"{address}{gate.login_path()}\n(Ctrl+C stops serving; the daemon keeps running)\n"
        )
        waiting = WaitingConnections()
        await _serve(build_app(gate, cockpit_command(home), waiting), sock, banner, waiting)
    finally:
        sock.close()
    return 0


async def _serve(
    app: web.Application, sock: socket.socket, banner: str, waiting: WaitingConnections
) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM; open sessions are then told to quit."""
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_GRACE_S)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    handlers = runner.server
    assert handlers is not None
    server = await loop.create_server(lambda: _Watched(handlers(), waiting), sock=sock)
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        sys.stdout.write(banner)
        sys.stdout.flush()
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)
            waiting.sweep()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        server.close()
        await runner.cleanup()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``hz serve`` to the main parser."""
    p = subparsers.add_parser("serve", help="the cockpit in a browser, on loopback, one login")
    p.add_argument("--port", type=_port, default=0, help="the port (default: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    p.set_defaults(run=cmd_serve, needs_kernel=False)
