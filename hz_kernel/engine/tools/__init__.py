"""Model-callable tools: one module per capability, a registry, the grant and the journal.

``TOOLS`` is the registry a turn offers the model from; a tool registered
there (``TOOLS.register``) is offered to every turn from then on, refused
unless the contract requires its capability.
"""

from __future__ import annotations

from hz_kernel.engine.tools import documents, files, git, handoff, heinzels, http, report
from hz_kernel.engine.tools.base import ToolArgs, ToolRegistry, ToolSpec, bounded
from hz_kernel.engine.tools.grant import Grant

__all__ = ["TOOLS", "Grant", "ToolArgs", "ToolRegistry", "ToolSpec", "bounded", "default_registry"]


def default_registry() -> ToolRegistry:
    """A registry holding every built-in tool."""
    registry = ToolRegistry()
    for family in (files, git, http, heinzels, documents, report, handoff):
        family.register(registry)
    return registry


TOOLS = default_registry()
