"""The review pane: a draft's diff, or the draft rendered as Markdown under its header,
scrollable."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown, Static


class DiffView(VerticalScroll):
    """A scrollable diff (or a line saying why there is none), or the rendered draft."""

    def compose(self) -> ComposeResult:
        yield Static(id="diff-text")
        markdown = Markdown(id="draft-markdown")
        markdown.display = False
        yield markdown

    @property
    def markdown(self) -> Markdown:
        return self.query_one("#draft-markdown", Markdown)

    def show(self, renderable: RenderableType) -> None:
        self.markdown.display = False
        text = self.query_one("#diff-text", Static)
        text.display = True
        text.update(renderable)
        self.scroll_home(animate=False)

    def say(self, message: str) -> None:
        self.show(Text(message, style="dim"))

    async def show_markdown(self, source: str, header: RenderableType) -> None:
        """The draft as a reader of the document will see it, under ``header``."""
        await self.markdown.update(source)
        self.query_one("#diff-text", Static).update(header)
        self.markdown.display = True
        self.scroll_home(animate=False)
