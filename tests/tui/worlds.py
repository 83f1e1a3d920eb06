"""Homes with real documents and real turns, for the cockpit's review and live-turn tests.

Each heinzel is made from the shipped ``digest`` template, approved, and
woken once through a real ``Kernel`` with the offline local model, so its
draft is in a real Markdown file under a tag line and its turn body holds
the streamed chunks and the draft record.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from hz_kernel.contracts import render_template
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel

NOTES = {
    "monday.md": "# Monday\n- fixed the login bug\n- shipped search\n",
    "tuesday.md": "# Tuesday\n- reviewed the checkout flow\n",
}
TAG = "🧝 DRAFT"
#: A week of notes long enough that a turn over them can be watched, steered or stopped.
LONG_NOTES = "".join(f"- item {n} of the long week\n" for n in range(14))


@dataclass
class World:
    """A home whose ``[documents] root`` is ``docs``, with notes and the heinzels made in it."""

    root: Path
    ids: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Home:
        return Home.resolve(self.root / "home")

    @property
    def docs(self) -> Path:
        return self.root / "docs"

    def document(self, name: str) -> Path:
        return self.docs / "reports" / f"{name}.md"

    def add_note(self, name: str, text: str) -> None:
        (self.docs / "notes" / name).write_text(text)


def make_world(root: Path) -> World:
    world = World(root)
    (root / "home").mkdir(parents=True)
    (world.docs / "notes").mkdir(parents=True)
    (world.docs / "reports").mkdir()
    (root / "home" / "hz.toml").write_text(f'[documents]\nroot = "{world.docs}"\n')
    for name, text in NOTES.items():
        world.add_note(name, text)
    os.chmod(root / "home", 0o700)
    return world


def digest(name: str) -> str:
    return render_template(
        "digest", {"name": name, "notes": "notes", "document": f"reports/{name}.md"}
    )


async def add_heinzel(kernel: Kernel, world: World, name: str, *, wake: bool = True) -> str:
    """Create, approve and (by default) wake one digest heinzel; its id."""
    made = await kernel.new(text=digest(name))
    await kernel.approve(ref=made.name)
    world.ids[name] = made.id
    if wake:
        await kernel.wake(ref=made.name)
    return made.id


async def build(root: Path, names: tuple[str, ...] = ("notes-digest", "team-digest")) -> World:
    """A world whose heinzels each have one pending draft in their own document."""
    world = make_world(root)
    kernel = await Kernel.open(world.home)
    try:
        for name in names:
            await add_heinzel(kernel, world, name)
    finally:
        await kernel.close()
    return world


#: The user's edit before approving the first draft, for worlds with a last approved text.
APPROVED_EDIT = ("shipped search", "shipped fuzzy search")


async def build_redrafted(root: Path, names: tuple[str, ...] = ("notes-digest",)) -> World:
    """A world whose heinzels each drafted, were edited and approved, then drafted again.

    Each pending draft has a last approved text in its section (the edited
    one), so the review desk has something to compare it with.
    """
    world = await build(root, names)
    kernel = await Kernel.open(world.home)
    try:
        for draft in (await kernel.drafts()).items:
            path = world.docs / str(draft.asset).removeprefix("doc:").partition("#")[0]
            path.write_text(path.read_text().replace(*APPROVED_EDIT))
            await kernel.approve(ref=draft.key)
        for name in names:
            await kernel.wake(ref=name)
    finally:
        await kernel.close()
    return world
