"""Where a user's hz data lives, and the layout inside it.

``HZ_HOME`` selects the directory; otherwise the platform's user data dir.
Layout (see ``docs/format.md``)::

    <home>/hz.toml                   settings
    <home>/daemon.json               the running daemon's discovery file
    <home>/heinzel/index.sqlite      the derived index
    <home>/heinzel/sources/          the source cache
    <home>/heinzel/<id>/session.jsonl, lock, turns/, inbox/, contract/
"""

from __future__ import annotations

import os
import re
from functools import cached_property
from pathlib import Path

from hz_kernel.config import Settings, load_settings
from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import ensure_private_dir

HEINZEL_ID = re.compile(r"^hz-[0-9A-HJKMNP-TV-Z]{26}$")
#: The spine's file name inside a heinzel's folder.
SPINE_NAME = "session.jsonl"


class Home:
    """A resolved hz home directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def resolve(cls, explicit: str | Path | None = None, *, create: bool = False) -> Home:
        """The home named by ``explicit``, ``HZ_HOME`` or the platform default.

        The platform default is created on first use. A home the user named
        explicitly must exist unless ``create`` is set, so a typo in
        ``HZ_HOME`` is an error rather than a fresh, empty home.
        """
        named = explicit or os.environ.get("HZ_HOME")
        if named:
            root = Path(named).expanduser()
            if not root.exists() and not create:
                raise HzError(
                    "HZS001",
                    "hz home does not exist (make the folder first: a home named by --home or"
                    " HZ_HOME is never created, so a typo cannot start an empty one)",
                    str(root),
                )
        else:
            import platformdirs  # (with tempfile) only for the default home

            root = Path(platformdirs.user_data_dir("hz", appauthor=False))
            create = True
        if root.exists() and not root.is_dir():
            raise HzError("HZS002", "hz home is not a directory", str(root))
        home = cls(root.resolve() if root.exists() else root)
        if create:
            ensure_private_dir(home.heinzel_root)
        return home

    @property
    def heinzel_root(self) -> Path:
        return self.root / "heinzel"

    @property
    def index_path(self) -> Path:
        return self.heinzel_root / "index.sqlite"

    @property
    def sources_dir(self) -> Path:
        return self.heinzel_root / "sources"

    @property
    def settings_path(self) -> Path:
        return self.root / "hz.toml"

    @property
    def discovery_path(self) -> Path:
        return self.root / "daemon.json"

    @cached_property
    def settings(self) -> Settings:
        return load_settings(self.settings_path)

    def heinzel_dir(self, heinzel_id: str) -> Path:
        if not HEINZEL_ID.match(heinzel_id):
            raise HzError("HZS040", "not a heinzel id", heinzel_id[:80])
        return self.heinzel_root / heinzel_id

    def spine_paths(self) -> dict[str, str]:
        """Each heinzel's spine file (whether or not it exists yet), by id.

        Plain strings: a listing checks every spine of the home before it
        answers, and 500 ``Path`` objects cost more than the 500 ``stat``s.
        """
        root = os.fspath(self.heinzel_root)
        return {h: os.path.join(root, h, SPINE_NAME) for h in self.heinzel_ids()}

    def scratch(self, folder: Path) -> Home:
        """This home with its heinzel folder (index, sources) at ``folder``: a read of a home
        that holds nothing yet runs there, so it leaves the home as it found it."""
        return _ScratchHome(self.root, folder)

    def heinzel_ids(self) -> list[str]:
        """Every heinzel directory under the home, sorted (ids are ULIDs, so by creation)."""
        if not self.heinzel_root.is_dir():
            return []
        return sorted(
            entry.name for entry in os.scandir(self.heinzel_root) if HEINZEL_ID.match(entry.name)
        )


class _ScratchHome(Home):
    def __init__(self, root: Path, folder: Path) -> None:
        super().__init__(root)
        self._folder = folder

    @property
    def heinzel_root(self) -> Path:
        return self._folder
