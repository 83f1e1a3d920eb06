"""The daemon log's lines, wrapped to the width so a long line is never cut, following the end.

Textual's ``Log`` draws each line on one row and cuts what does not fit;
this is the transcript's wrapping view (``TranscriptView``: rows are slices
of a line, re-wrapped on resize, control characters drawn as pictures)
with the log's look and a cap on the lines it keeps.
"""

from __future__ import annotations

from hz_tui.transcript import Line
from hz_tui.widgets.transcript_view import TranscriptView


class LogView(TranscriptView):
    """At most ``max_lines`` log lines, the newest last; following the end until scrolled up."""

    DEFAULT_CSS = """
    LogView {
        background: $surface;
        color: $text;
    }
    """

    def __init__(self, *, max_lines: int, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_lines = max_lines
        self.following = True

    def write_lines(self, texts: list[str]) -> None:
        self.show([*self.lines, *(Line(text) for text in texts)][-self.max_lines :])
