"""``hz --connect URL --token-file FILE``: a daemon reached by its wire alone, through a forward.

The daemon listens on its own machine's loopback only; from a laptop it is
reached through a port forward (``ssh -L 9000:127.0.0.1:PORT box``), so the
URL names this machine's loopback too. The token comes from a file the user
copied (``daemon.json``'s ``token``), never from the command line, where
other local users could read it. Nothing of the local ``$HZ_HOME`` is used:
the cockpit keeps its own small files (preferences, unsent composer texts)
in a folder per connection under the user's state dir.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from hz_kernel.daemon.protocol import LOOPBACK_NAMES
from hz_kernel.errors import HzError, UsageError
from hz_kernel.home import Home
from hz_kernel.store.fsutil import ensure_private_dir, open_regular

if TYPE_CHECKING:
    from hz_kernel.client import KernelClient
    from hz_kernel.http_client import HttpClient

#: The largest token file read (a token is 43 characters; anything far larger is not one).
TOKEN_FILE_LIMIT = 4096


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--connect",
        metavar="URL",
        help="attach to a daemon by its wire only, e.g. http://127.0.0.1:9000 through ssh -L",
    )
    parser.add_argument(
        "--token-file", metavar="FILE", help="the daemon's token for --connect (a 0600 file)"
    )


def wanted(args: argparse.Namespace) -> bool:
    """Whether the command line asked for a remote attach (either option)."""
    return args.connect is not None or args.token_file is not None


def check_url(url: str) -> tuple[str, int]:
    """The loopback host and port ``url`` names; anything else is ``HZU121``."""
    try:
        split = urlsplit(url)
        port = split.port
    except ValueError:
        port = None
        split = None
    if (
        split is None
        or split.scheme != "http"
        or split.hostname not in LOOPBACK_NAMES
        or port is None
        or split.path not in ("", "/")
        or split.username is not None
    ):
        raise UsageError(
            "HZU121",
            "--connect takes http://127.0.0.1:PORT, the local end of a port forward "
            "(e.g. ssh -L PORT:127.0.0.1:DAEMON_PORT box)",
            url[:200],
        )
    return str(split.hostname), port


def read_token(path: str, *, warn: bool = True) -> str:
    """The token in ``path``: ``HZU122`` when it is missing, unreadable, empty or no token.

    ``warn`` says on stderr when others may read the file (not once the cockpit draws).
    """
    named = Path(path).expanduser()
    try:
        fd = open_regular(named, os.O_RDONLY, follow=True)
        with os.fdopen(fd, "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            raw = file.read(TOKEN_FILE_LIMIT + 1)
    except FileNotFoundError:
        raise HzError("HZU122", "no such token file", path) from None
    except OSError as exc:
        raise HzError("HZU122", f"cannot read the token file ({exc.strerror})", path) from None
    if len(raw) > TOKEN_FILE_LIMIT:
        raise HzError("HZU122", f"the token file is over {TOKEN_FILE_LIMIT} bytes", path)
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        token = ""
    # A control byte would fail in the HTTP header, far from the file that holds it.
    if not token or not token.isprintable() or " " in token:
        raise HzError("HZU122", "the token file holds no token (one line, as in daemon.json)", path)
    if warn and stat.S_IMODE(mode) & 0o077:
        sys.stderr.write(f"warning: {path} is readable by others; chmod 600 it\n")
    return token


def connection_home(host: str, port: int) -> Home:
    """The cockpit's own folder for this connection (0700), never the local ``$HZ_HOME``."""
    import platformdirs  # (with tempfile) only for a connection's folder

    state = Path(platformdirs.user_state_dir("hz", appauthor=False))
    safe = host.replace(":", "_")
    return Home(ensure_private_dir(state / "connections" / f"{safe}-{port}"))


async def attach(url: str, token: str, *, token_file: str | None = None) -> HttpClient:
    """A client of the daemon at ``url``, its health checked, marked ``remote``.

    Given ``token_file``, the client reads it again when it dials the URL
    anew after losing the daemon (``RemoteClient.redial``).
    """
    from hz_kernel.remote_client import RemoteClient  # the HTTP stack, only once it is used

    client, _ = await RemoteClient.dial(url, token, token_file=token_file)
    return client


async def open_remote(args: argparse.Namespace) -> tuple[Home, KernelClient]:
    """``--connect`` and ``--token-file`` checked, the daemon attached: (its local folder, client).

    Commands that manage this machine's daemon (``hz daemon …``) have no
    meaning over a forward and are refused (``HZU120``).
    """
    if args.connect is None or args.token_file is None:
        raise UsageError("HZU120", "--connect and --token-file go together")
    if not getattr(args, "needs_kernel", True) or args.group == "demo":
        raise UsageError(
            "HZU120",
            f"hz {args.group} works on this machine's home; run it on the daemon's machine",
        )
    host, port = check_url(args.connect)
    token = read_token(args.token_file)
    client = await attach(args.connect.rstrip("/"), token, token_file=args.token_file)
    return connection_home(host, port), client


Cockpit = Callable[[Home, "KernelClient", Sequence[Any]], Awaitable[int]]


async def cockpit(args: argparse.Namespace, run_cockpit: Cockpit) -> int:
    """``hz --connect URL --token-file FILE``: the cockpit on the daemon's wire only.

    ``hz demo`` with these options is refused by ``open_remote``: a demo builds a local home.
    """
    home, client = await open_remote(args)
    try:
        return await run_cockpit(home, client, ())
    finally:
        await client.close()
