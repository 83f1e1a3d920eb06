"""The client of a daemon reached with ``hz --connect``, which can dial it again when it is lost.

A remote cockpit has no discovery file to tell it where its daemon went: the
daemon is wherever its URL leads (the local end of a port forward). When the
daemon is lost, the cockpit dials the same URL again — a daemon restarted on
the same port, or behind the same forward — and reads the token file afresh
each time, since every start of a daemon makes a new token.

Kept apart from ``hz_kernel.remote`` so the command line's options load
without the HTTP stack.
"""

from __future__ import annotations

import contextlib
import logging

from hz_kernel.daemon.discovery import HEALTH_TIMEOUT_S
from hz_kernel.daemon.protocol import PROTOCOL_VERSION, Discovery, Health
from hz_kernel.errors import HzError
from hz_kernel.http_client import HttpClient
from hz_kernel.remote import read_token

log = logging.getLogger(__name__)


class RemoteClient(HttpClient):
    """An ``HttpClient`` of the daemon at ``url``, its token from ``token_file`` (when given)."""

    remote = True

    def __init__(self, url: str, token: str, *, token_file: str | None = None) -> None:
        super().__init__(
            Discovery(
                pid=0,
                address=url,
                token=token,
                protocol=PROTOCOL_VERSION,
                started_at="",
                home="",
                run="",
            )
        )
        self.url = url
        self.token_file = token_file
        self.refusal: HzError | None = None
        """Why the last ``redial`` found a daemon and would not take it (None: it did not)."""

    @classmethod
    async def dial(
        cls, url: str, token: str, *, token_file: str | None = None
    ) -> tuple[RemoteClient, Health]:
        """A client of the daemon at ``url`` and the health it answered (``HZD040`` if none)."""
        client = cls(url, token, token_file=token_file)
        try:
            health = await client.health(HEALTH_TIMEOUT_S)
        except BaseException:
            await client.close()
            raise
        client.discovery = Discovery(
            pid=health.pid,
            address=url,
            token=token,
            protocol=health.protocol,
            started_at=health.started_at,
            home=health.home,
            run=health.run,
        )
        client.where = f"remote daemon (pid {health.pid}) at {url}, home {health.home}"
        return client, health

    async def redial(self) -> RemoteClient | None:
        """A client of whichever daemon answers at this URL now; None while none does.

        The token file is read again (a restarted daemon has a new token; a
        file that cannot be read just now keeps the last token). A daemon
        that drains is on its way out of a restart: not found, the next one is.
        A daemon of another home (a forward or port now leading elsewhere) is
        refused: ``refusal`` says why (``HZU127``), logged the first time.
        """
        token = self.discovery.token
        if self.token_file is not None:
            with contextlib.suppress(HzError):
                token = read_token(self.token_file, warn=False)
        try:
            client, health = await RemoteClient.dial(self.url, token, token_file=self.token_file)
        except HzError:
            return None
        if health.draining:
            await client.close()
            return None
        if health.home != self.discovery.home:
            await client.close()
            if self.refusal is None:
                log.warning("not re-attaching to %s: it serves home %s", self.url, health.home)
            self.refusal = HzError(
                "HZU127",
                f"another home answers at {self.url}",
                f"home {health.home}, attached to home {self.discovery.home}",
            )
            return None
        self.refusal = None
        return client
