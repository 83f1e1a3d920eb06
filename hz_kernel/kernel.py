"""The kernel facade: every command hz knows, composed from the command groups.

Heads — the CLI, the cockpit, the daemon's routes — reach these methods
through ``KernelClient`` and the operations table, never directly.
"""

from __future__ import annotations

from hz_kernel.clock import now_utc
from hz_kernel.commands.lifecycle import LifecycleCommands
from hz_kernel.commands.store import StoreCommands
from hz_kernel.commands.tick import TickCommands
from hz_kernel.commands.turns import TurnCommands
from hz_kernel.commands.watching import WatchCommands
from hz_kernel.observe import Observation, Observer

__all__ = ["Kernel", "Observation", "Observer", "now_utc"]


class Kernel(TickCommands, TurnCommands, LifecycleCommands, StoreCommands, WatchCommands):
    """One home's kernel: open with ``await Kernel.open(home)``, close when done."""
