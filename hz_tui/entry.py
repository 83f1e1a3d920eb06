"""The ``hz`` command: the kernel's command line, with the cockpit plugged in.

The kernel knows nothing of the cockpit (an import-linter contract), so the
console script starts here: it hands ``hz_kernel.cli.main`` a function that
runs the cockpit. Textual is imported only when the cockpit actually opens,
so scripts calling ``hz heinzel list`` never pay for it.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hz_kernel.client import KernelClient
    from hz_kernel.home import Home


async def run_cockpit(
    home: Home,
    client: KernelClient,
    beside: Sequence[Callable[[asyncio.Event], Awaitable[None]]],
) -> int:
    gc.disable()  # enabled again (after a freeze) once the first frame is drawn
    from hz_tui.app import run

    return int(await run(home, client, beside=beside))


def main() -> int:
    # Start-up allocates objects that live as long as the process; a collection among
    # them finds nothing and costs tens of milliseconds.
    gc.disable()
    try:
        from hz_kernel.cli import main as kernel_main
    finally:
        gc.enable()
    from hz_tui.serve import register as register_serve

    return kernel_main(cockpit=run_cockpit, commands=[register_serve])
