"""The documents adapter: drafts placed as tagged sections in the user's Markdown files."""

from hz_kernel.adapters.documents.markdown import MarkdownDocuments
from hz_kernel.adapters.documents.models import (
    DraftChange,
    DraftState,
    DraftStatus,
    FoundSection,
    PlacedDraft,
)

__all__ = [
    "DraftChange",
    "DraftState",
    "DraftStatus",
    "FoundSection",
    "MarkdownDocuments",
    "PlacedDraft",
]
