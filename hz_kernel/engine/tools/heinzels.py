"""``heinzels:read``: the text last approved of an upstream output an input names."""

from __future__ import annotations

from pydantic import Field

from hz_kernel.adapters.sources import HeinzelSource, SourceRequest
from hz_kernel.adapters.sources.heinzel import FACET
from hz_kernel.clock import now_utc
from hz_kernel.engine.tools.base import OUTSIDE_ROOTS, ToolArgs, ToolRegistry, ToolSpec, refused
from hz_kernel.engine.tools.grant import Grant


class ApprovedOutputArgs(ToolArgs):
    heinzel: str = Field(description="the upstream heinzel's name")
    output: str = Field(description="the output of it your inputs name")


def read_approved_output(args: ToolArgs, grant: Grant) -> str:
    assert isinstance(args, ApprovedOutputArgs)
    if (args.heinzel, args.output) not in grant.upstreams:
        raise refused(
            OUTSIDE_ROOTS,
            "not an upstream output this heinzel's inputs name",
            f"{args.heinzel}:{args.output}",
        )
    request = SourceRequest(
        source="heinzel",
        method="approved_output",
        args={"heinzel": args.heinzel, "output": args.output},
    )
    result = HeinzelSource(grant.heinzel_root, grant.base_dir).fetch(request, now=now_utc())
    return result.content.get(FACET, f"{args.heinzel} has no approved {args.output} yet")


def register(registry: ToolRegistry) -> None:
    registry.register(
        ToolSpec(
            name="read_approved_output",
            capability="heinzels:read",
            description="Read the text the user last approved of another heinzel's output.",
            args=ApprovedOutputArgs,
            run=read_approved_output,
        )
    )
