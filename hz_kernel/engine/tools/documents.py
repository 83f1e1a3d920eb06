"""``documents:read``: the section of a document this heinzel keeps, as it stands now."""

from __future__ import annotations

from pydantic import Field

from hz_kernel.adapters.sources.document import read_markdown, section_text
from hz_kernel.engine.tools.base import (
    NOT_READABLE,
    OUTSIDE_ROOTS,
    ToolArgs,
    ToolRegistry,
    ToolSpec,
    refused,
)
from hz_kernel.engine.tools.grant import Grant


class KeptSectionArgs(ToolArgs):
    asset: str | None = Field(
        default=None, description="the asset (doc:PATH#anchor); the only one kept when omitted"
    )


def read_kept_section(args: ToolArgs, grant: Grant) -> str:
    assert isinstance(args, KeptSectionArgs)
    kept = [k for k in grant.kept if args.asset is None or k.asset == args.asset]
    if not kept or (args.asset is None and len(grant.kept) > 1):
        named = ", ".join(k.asset for k in grant.kept) or "none"
        raise refused(
            OUTSIDE_ROOTS,
            f"not a section this heinzel keeps (it keeps: {named})",
            args.asset or "asset",
        )
    section = kept[0]
    text = read_markdown(section.path)
    if section.anchor is None:
        return text
    found = section_text(text, section.anchor)
    if found is None:
        raise refused(
            NOT_READABLE, f"no heading {section.anchor!r} in the document yet", section.asset
        )
    return found


def register(registry: ToolRegistry) -> None:
    registry.register(
        ToolSpec(
            name="read_kept_section",
            capability="documents:read",
            description="Read the document section you keep, as it stands now (edits included).",
            args=KeptSectionArgs,
            run=read_kept_section,
        )
    )
