"""One clock for every relative time on screen ("3m ago", "in 2h", "running 5m").

A page subscribes to ``Ticker.ticked`` and redraws what reads the clock;
the app runs the one interval timer, so a screen full of times costs one
wake-up every ``TICK_SECONDS`` rather than a timer per cell. Subscribers
get the time to draw with (``hz_kernel.clock.now_utc``: ``HZ_NOW`` or a
pinned test clock holds it still).
"""

from __future__ import annotations

from datetime import datetime

from textual.dom import DOMNode
from textual.signal import Signal

from hz_kernel.clock import now_utc

#: Relative times are drawn to the minute past the first minute; five seconds keeps them
#: close to the clock without waking hundreds of rows every second.
TICK_SECONDS = 5.0


class Ticker:
    """The shared clock signal; ``start`` it once, from the app's ``on_mount``."""

    def __init__(self, owner: DOMNode) -> None:
        self.owner = owner
        self.ticked: Signal[datetime] = Signal(owner, "ticked")

    def start(self) -> None:
        self.owner.set_interval(TICK_SECONDS, self.tick)

    def tick(self) -> None:
        self.ticked.publish(now_utc())
