"""The ``hz`` command: the kernel's command line, with the cockpit plugged in.

The kernel knows nothing of the cockpit (an import-linter contract), so the
console script starts here: it hands ``hz_kernel.cli.main`` a function that
runs the cockpit. Textual is imported only when the cockpit actually opens,
so scripts calling ``hz heinzel list`` never pay for it.
"""

from __future__ import annotations

import gc
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nothing that takes time to load before ``main`` can take Ctrl-C
    import asyncio
    from collections.abc import Awaitable, Callable, Sequence

    from hz_kernel.client import KernelClient
    from hz_kernel.home import Home


async def run_cockpit(
    home: Home,
    client: KernelClient,
    beside: Sequence[Callable[[asyncio.Event], Awaitable[None]]],
    /,
    *,
    daemon_ends_with_it: bool = False,
) -> int:
    gc.disable()  # enabled again (after a freeze) once the first frame is drawn
    from hz_tui.app import run

    return int(await run(home, client, beside=beside, daemon_ends_with_it=daemon_ends_with_it))


def prepare_process() -> None:
    """What the ``hz`` process sets before it imports anything of its own.

    Start-up allocates objects that live as long as the process; a collection
    among them finds nothing and costs tens of milliseconds, so the collector
    is off until the caller enables it, after freezing them (``gc.freeze``)
    so that no later collection walks them again. hz uses no pydantic plugins, and
    looking for them reads the metadata of every installed package (about
    30 ms of a start); a user who wants one sets ``PYDANTIC_DISABLE_PLUGINS``
    to an empty string.
    """
    gc.disable()
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def main() -> int:
    prepare_process()
    try:
        from hz_kernel.cli import main as kernel_main
        from hz_tui.serve import register as register_serve
    except KeyboardInterrupt:  # Ctrl-C while hz loads
        from hz_kernel.errors import say_interrupted

        return say_interrupted()
    finally:
        gc.freeze()
        gc.enable()

    return kernel_main(cockpit=run_cockpit, commands=[register_serve])
