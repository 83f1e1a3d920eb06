"""Session 6 (new-user pass): the kernel page and the daemon's restart say only what is true.

Real kernels behind the cockpit: the embedded one ``hz --embedded`` opens,
and a daemon started on a throwaway home (stopped at teardown, whatever
happened).
"""

from __future__ import annotations

from hz_kernel.client import LocalClient
from hz_kernel.commands.tick import TickPulse
from hz_kernel.connect import connect
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_tui.app import CockpitApp
from hz_tui.commands import palette_commands
from hz_tui.screens.daemon import DaemonScreen, tick_facts
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.key_bar import KeyBar
from tests.tui import homes
from tests.tui.test_attach import daemon, hz
from tests.tui.test_cockpit import SIZE, text_of, until

__all__ = ["daemon"]  # the fixture: a daemon started on the standard home, stopped after


def messages_of(app: CockpitApp) -> list[str]:
    return [n.message for n in app.notices.history]


async def test_embedded_kernel_page_offers_no_daemon_restart(
    cockpit_home: Home, client: LocalClient
) -> None:
    """An embedded kernel is not a daemon: Ctrl+R is off its kernel page's key bar and palette,
    and pressing it says nothing (no "Restarting the daemon…" toast, no HZU064)."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.press("f2")
        await until(lambda: isinstance(app.screen, DaemonScreen))
        page = app.screen
        assert isinstance(page, DaemonScreen)
        await until(lambda: "embedded in this cockpit" in text_of(page.query_one("#facts", Facts)))
        await pilot.pause()
        assert "ctrl+r" not in page.active_bindings
        assert all(key.description != "Restart daemon" for key in page.query_one(KeyBar).keys)
        titles = [c.title for c in palette_commands(app, page)]
        assert not any("Restart" in title for title in titles), titles
        await pilot.press("ctrl+r")
        await pilot.pause(0.3)
        assert messages_of(app) == []


async def test_a_catch_up_that_finds_the_daemon_gone_again_leaves_no_error_notice(
    daemon: Home,
) -> None:
    """After Ctrl+R, the cockpit's link may find the new daemon itself and catch up (a full
    listing) while the restart hands over its own client, which closes the link's: the
    listing then meets a lost link. The header says so and the link lists again once back,
    so no "HZD110: not connected" error notice is left next to "Restarted"."""
    client = await connect(daemon)
    assert isinstance(client, HttpClient)
    app = CockpitApp(daemon, client)
    try:
        async with app.run_test(size=SIZE):
            await app.loaded.wait()
            stopped = hz(daemon, "daemon", "stop")
            assert stopped.returncode == 0, stopped.stderr
            await until(lambda: not app.link.attached)
            await app.link.catch_up()
            assert [n.message for n in app.notices.history if n.severity == "error"] == []
    finally:
        await app.link.close()


async def test_the_kernel_page_says_a_tick_is_under_way(
    cockpit_home: Home, client: LocalClient
) -> None:
    """A tick runs the turns it wakes to their end, so the first one of a slow model's home
    can last minutes: meanwhile the kernel page said "Last not yet · Ticks 0" as if the loop
    did not run. The status names the tick under way, and the page says since when."""
    pulse = TickPulse(60.0)
    client.kernel.pulse = pulse
    pulse.begin()
    tick = (await client.status()).tick
    assert tick is not None and tick.ticks == 0 and tick.ticking_since == homes.NOW
    shown = dict(tick_facts(tick))
    assert shown["Now"].startswith("ticking since ") and shown["Last"] == "not yet"
    # The next tick comes after this one, never "3s ago" (new-user pass).
    assert shown["Next"] == "when this one ends, then every 1m"
    pulse.beat()
    tick = (await client.status()).tick
    assert tick is not None and tick.ticks == 1 and tick.ticking_since is None
    shown = dict(tick_facts(tick))
    assert "Now" not in shown and "ago" not in shown["Next"]
