"""``http:read``: fetch a URL an input names, through the ``http`` source (1 MiB, 10 s)."""

from __future__ import annotations

from pydantic import Field

from hz_kernel.adapters.sources import HttpSource, SourceRequest
from hz_kernel.clock import now_utc
from hz_kernel.engine.tools.base import ToolArgs, ToolRegistry, ToolSpec
from hz_kernel.engine.tools.grant import Grant


class FetchUrlArgs(ToolArgs):
    url: str = Field(description="a URL one of your inputs names")


def fetch_url(args: ToolArgs, grant: Grant) -> str:
    """The page's body; the source's own codes (HZT050–HZT052) tell a failure."""
    assert isinstance(args, FetchUrlArgs)
    request = SourceRequest(source="http", method="get", args={"url": grant.url(args.url)})
    return HttpSource().fetch(request, now=now_utc()).content["body"]


def register(registry: ToolRegistry) -> None:
    registry.register(
        ToolSpec(
            name="fetch_url",
            capability="http:read",
            description="Fetch a web page your inputs name (its body, up to 1 MiB).",
            args=FetchUrlArgs,
            run=fetch_url,
        )
    )
