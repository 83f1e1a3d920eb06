"""Issue 13 feed defects item 4: a remote client re-attaches only to its own home.

A cockpit attached with ``--connect`` knows its daemon only by a URL. When
that daemon goes and another home's daemon comes up on the same port (or
behind the same forward), dialing the URL again must not attach the
cockpit to a home the user never chose.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from daemon_helpers import Daemons, discovery, hz, make_home

from hz_kernel.home import Home
from hz_kernel.remote_client import RemoteClient

NOW = "2026-12-01T09:00:00Z"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def serve(daemons: Daemons, home: Home, token_file: Path) -> None:
    """Start ``home``'s daemon and copy its token into ``token_file`` (what the user does)."""
    daemons.start(home, env={"HZ_NOW": NOW})
    token_file.write_text(discovery(home).token + "\n")


def stop(home: Home) -> None:
    stopped = hz(home.root, "daemon", "stop", env={"HZ_NOW": NOW})
    assert stopped.returncode == 0, stopped.stderr


async def test_redial_refuses_a_daemon_of_another_home_on_the_same_url(
    tmp_path: Path, daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 feed defects item 4: after its daemon stops, a RemoteClient dialing the same
    URL finds another home's daemon there: it stays unattached and says why (HZU127, naming
    the URL), then attaches again once its own home's daemon answers there."""
    monkeypatch.setenv("HZ_NOW", NOW)
    port = free_port()
    ours = make_home(tmp_path / "ours", heinzels=1, daemon={"port": port})
    theirs = make_home(tmp_path / "theirs", heinzels=1, daemon={"port": port})
    token_file = tmp_path / "token"
    url = f"http://127.0.0.1:{port}"

    serve(daemons, ours, token_file)
    client, health = await RemoteClient.dial(url, discovery(ours).token, token_file=str(token_file))
    try:
        assert health.home == str(ours.root)
        stop(ours)
        serve(daemons, theirs, token_file)
        assert await client.redial() is None
        assert client.refusal is not None and client.refusal.code == "HZU127"
        assert url in str(client.refusal)
        stop(theirs)
        serve(daemons, ours, token_file)
        again = await client.redial()
        assert again is not None and client.refusal is None
        assert again.discovery.home == str(ours.root)
        await again.close()
    finally:
        await client.close()
