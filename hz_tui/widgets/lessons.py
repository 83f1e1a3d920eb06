""" "What I learned from you": a heinzel's lessons, dismissed ones kept and marked."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from hz_kernel.api import LessonSummary


class LessonList(Static):
    """Lessons in the order they were learned; a dismissed one is struck through and labelled."""

    def show(self, lessons: list[LessonSummary]) -> None:
        if not lessons:
            self.update(Text("Nothing yet: lessons come from your edits to my drafts.", "dim"))
            return
        lines = []
        for lesson in lessons:
            if lesson.dismissed:
                line = Text.assemble(
                    ("• ", "dim"), ("dismissed ", "dim italic"), (lesson.lesson, "dim strike")
                )
            else:
                line = Text.assemble("• ", lesson.lesson)
            lines.append(line)
        self.update(Group(*lines))
