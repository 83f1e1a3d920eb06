"""Issue 14 item 5 (attack): identical toasts group, and a repeat keeps the group up longer.

Two or more notices with the same text and severity raised while the first
still shows are one toast counting them ("… (×3)"), whose time starts again
with each repeat: the toast stays for a full timeout after the last one, as
one toast per repeat would have. The notices page lists them as one line.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import time_machine
from textual.widgets import Static
from textual.widgets._toast import Toast

from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.notices import NoticesScreen
from tests.tui.test_cockpit import SIZE, text_of, until

NOTICE = "weekly-report: a turn failed: the model stream ended early"
TIMEOUT = 8.0


def shown(app: CockpitApp) -> list[str]:
    return [str(toast.render()) for toast in app.screen.query(Toast) if toast.region]


async def test_issue14_item5_a_repeat_joins_the_toast_and_restarts_its_time(
    cockpit_home: Home, client: LocalClient
) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    start = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False) as clock:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await app.loaded.wait()
            app.clear_notifications()
            app.notify(NOTICE, severity="error", timeout=TIMEOUT)
            clock.move_to(start + timedelta(seconds=6))
            app.notify(NOTICE, severity="error", timeout=TIMEOUT)
            clock.move_to(start + timedelta(seconds=12))
            app.notify(NOTICE, severity="error", timeout=TIMEOUT)
            app.notify(NOTICE, severity="warning", timeout=TIMEOUT)  # another severity: its own
            await until(lambda: len(shown(app)) == 2)
            assert sum("(×3)" in text for text in shown(app)) == 1, shown(app)
            (group,) = (n for n in app.notices.showing if n.count == 3)
            assert group.toast is not None and group.toast.time_left == TIMEOUT
            clock.move_to(start + timedelta(seconds=12 + TIMEOUT - 1))
            assert group.showing  # the first raise's time is long over; the last one's is not
            clock.move_to(start + timedelta(seconds=12 + TIMEOUT))
            assert not group.showing
            await pilot.press("f5")
            assert isinstance(app.screen, NoticesScreen)
            listed = text_of(app.screen.query_one("#notices", Static))
            assert listed.count(NOTICE) == 2 and f"{NOTICE} (×3)" in listed, listed
