"""Issue 13 item 4: a cockpit whose daemon is gone says so, refuses keys politely, and re-attaches.

The daemon that is gone is a real ``HttpClient`` pointed at a port nothing
listens on; the daemon that comes later is a real ``hz daemon start``. The
full product (SIGKILL, a turn meanwhile, a new port and token) is pinned in
tmux: ``tests/e2e/test_cockpit_reconnects.py``.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from textual.pilot import Pilot

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.daemon.protocol import PROTOCOL_VERSION, Discovery
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.remote_client import RemoteClient
from hz_tui import app as app_module
from hz_tui.app import CockpitApp
from hz_tui.messages import RowsUpdate
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.daemon import DaemonScreen
from hz_tui.widgets.heinzel_table import HeinzelTable
from tests.tui import homes
from tests.tui.cells import row_text, screen_cells
from tests.tui.test_attach import hz
from tests.tui.test_cockpit import SIZE, until
from tests.tui.test_snapshots import loaded


def gone_daemon(home: Home, port: int | None = None) -> Discovery:
    """A discovery for a daemon that is gone: nothing listens on its port any more."""
    if port is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    return Discovery(
        pid=4242,
        address=f"http://127.0.0.1:{port}",
        token="gone",
        protocol=PROTOCOL_VERSION,
        started_at=homes.NOW,
        home=str(home.root),
        run="gone",
    )


async def test_keys_say_not_connected_until_a_daemon_comes_and_the_cockpit_attaches(
    cockpit_home: Home,
) -> None:
    """Issue 13 item 4: a cockpit whose daemon is gone says "not connected" (HZD110) for keys,
    never HZD040, and attaches by itself to the daemon that starts later."""
    app = CockpitApp(cockpit_home, HttpClient(gone_daemon(cockpit_home)))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await until(lambda: app.sub_title.startswith("reconnecting…"))
            app.clear_notifications()
            await pilot.press("r")  # the home's refresh: a listing
            await until(lambda: any("not connected" in n.message for n in app._notifications))
            shown = [n.message for n in app._notifications]
            assert len(shown) == 1 and "HZD110" in shown[0] and "HZD040" not in shown[0]
            assert app.get_home().query_one(HeinzelTable).row_count == 0

            started = hz(cockpit_home, "daemon", "start", "--json")
            assert started.returncode == 0, started.stderr
            pid = json.loads(started.stdout)["pid"]
            await until(lambda: app.sub_title.startswith(f"daemon (pid {pid})"))
            table = app.get_home().query_one(HeinzelTable)
            await until(lambda: table.row_count == 9)
    finally:
        hz(cockpit_home, "daemon", "stop")
        await app.link.close()


def test_reconnecting_header(snap_compare, cockpit_home: Home) -> None:
    """Issue 13 item 4: while its daemon is gone the header says ``reconnecting…``.

    The cockpit is attached to a daemon nobody serves any more (nothing
    listens on its address, no ``daemon.json`` names another). The rows are
    what the home's kernel lists, as the cockpit showed them before the loss;
    the start's "not connected" toast is cleared for the picture.
    """
    app = CockpitApp(cockpit_home, HttpClient(gone_daemon(cockpit_home, port=9)), live=False)

    async def lost(pilot: Pilot[int]) -> None:
        await loaded(pilot)
        for _ in range(200):
            if not app.link.attached:
                break
            await pilot.pause(0.05)
        kernel = await LocalClient.open(cockpit_home)
        try:
            listed = await kernel.call(ops.LIST, ops.ListRequest())
        finally:
            await kernel.close()
        app.publish(RowsUpdate(rows=listed.items, full=True))
        app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=lost)


async def test_issue14_item7_at_80_columns_the_header_keeps_reconnecting_and_the_kind(
    cockpit_home: Home,
) -> None:
    """issue 14 item 7: at 80 columns the header's suffix drops the daemon's address (which
    cut it) and keeps what matters whole — reconnecting, a daemon, its pid; wide enough, the
    whole suffix comes back."""
    app = CockpitApp(cockpit_home, HttpClient(gone_daemon(cockpit_home)))
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await app.loaded.wait()
            await until(lambda: app.sub_title.startswith("reconnecting…"))
            await pilot.pause()
            header = row_text(screen_cells(app), 0)
            assert "reconnecting… (lost the daemon (pid 4242))" in header, header
            await pilot.resize_terminal(160, 24)
            await pilot.pause()
            header = row_text(screen_cells(app), 0)
            assert "reconnecting… (lost the daemon (pid 4242) at http://127.0.0.1:" in header
    finally:
        await app.link.close()


async def test_fix13_a_lost_remote_daemon_keeps_its_pid_at_80_columns_and_says_the_remedy(
    cockpit_home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New-user pass (issue 13) finding 4: a remote cockpit whose daemon restarted on a new
    port was told to start one "on its machine" though one ran, and at 80 columns its header
    was cut to "reconnecting… (lost the remote daemon (p…", losing the pid. The header keeps
    the pid whole; the toast names the real remedies (the token file, a fixed port)."""
    monkeypatch.setattr(app_module, "GONE_AFTER_S", 0.2)
    gone = gone_daemon(cockpit_home).model_copy(update={"home": "/srv/hz"})
    token_file = tmp_path / "token"
    token_file.write_text("gone\n")
    token_file.chmod(0o600)
    client = RemoteClient(gone.address, gone.token, token_file=str(token_file))
    client.discovery = gone
    client.where = f"remote daemon (pid 4242) at {gone.address}, home /srv/hz"
    app = CockpitApp(cockpit_home, client)
    app.link.how = "adopted"  # as after a first re-attachment: the longest short form
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await app.loaded.wait()
            await until(lambda: any("No daemon answers" in n.message for n in app.notices.history))
            await pilot.pause()
            header = row_text(screen_cells(app), 0)
            assert "reconnecting… (" in header and "(pid 4242))" in header, header
            said = next(n.message for n in app.notices.history if "No daemon answers" in n.message)
            assert f"No daemon answers at {gone.address}" in said
            assert "token file" in said and "[daemon] port" in said and "docs/cockpit.md" in said
            assert "start it on its machine" not in said
    finally:
        await app.link.close()


async def test_fix13_ctrl_r_with_no_daemon_asks_to_start_one(cockpit_home: Home) -> None:
    """New-user pass (issue 13) finding 9: with the daemon gone, Ctrl+R on the kernel page
    asked "Restart the daemon?" though it would start one."""
    app = CockpitApp(cockpit_home, HttpClient(gone_daemon(cockpit_home)), live=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            await until(lambda: not app.link.attached)
            await pilot.press("f2")
            await until(lambda: isinstance(app.screen, DaemonScreen))
            await pilot.press("ctrl+r")
            await until(lambda: isinstance(app.screen, ConfirmScreen))
            asked = app.screen
            assert isinstance(asked, ConfirmScreen)
            assert (asked.question, asked.yes) == ("Start the daemon?", "Start")
            await pilot.press("escape")
    finally:
        await app.link.close()
