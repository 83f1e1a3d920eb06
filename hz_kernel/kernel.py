"""The kernel facade: every command hz knows, composed from the command groups.

Heads — the CLI, the cockpit, the daemon's routes — reach these methods
through ``KernelClient`` and the operations table, never directly.
"""

from __future__ import annotations

from hz_kernel import api
from hz_kernel.clock import now_utc
from hz_kernel.commands.actions import ActionCommands
from hz_kernel.commands.composer import ComposerCommands
from hz_kernel.commands.doctor import DoctorCommands
from hz_kernel.commands.graph import GraphCommands
from hz_kernel.commands.lifecycle import LifecycleCommands
from hz_kernel.commands.review import ReviewCommands
from hz_kernel.commands.team import TeamCommands
from hz_kernel.commands.tick import TickCommands
from hz_kernel.commands.transcripts import TranscriptCommands
from hz_kernel.commands.turns import TurnCommands
from hz_kernel.observe import Observation, Observer

__all__ = ["Kernel", "Observation", "Observer", "now_utc"]


class Kernel(
    TickCommands,
    ReviewCommands,
    TurnCommands,
    LifecycleCommands,
    DoctorCommands,
    TranscriptCommands,
    ComposerCommands,
    GraphCommands,
    ActionCommands,
    TeamCommands,
):
    """One home's kernel: open with ``await Kernel.open(home)``, close when done."""

    def load(self) -> api.KernelLoad:
        """What this kernel runs and holds queued now, under which limits (status, health)."""
        admission = self.admission
        return api.KernelLoad(
            turns_running=admission.running("turn"),
            turns_queued=admission.queued("turn"),
            attempts_running=admission.running("attempt"),
            attempts_queued=admission.queued("attempt"),
            max_concurrent_turns=admission.max_turns,
            max_concurrent_attempts=admission.max_attempts,
            memory_floor_mb=admission.floor_mb,
            memory_available_mb=admission.sample_memory(),
            turns=self.turn_activity(),
            tick=self.tick_status(),
        )
