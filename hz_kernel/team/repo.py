"""A private cache of the team repository under the home, holding only hz's refs.

``<home>/team/<repo-id>.git`` is a bare repository that fetches nothing but
``refs/heads/hz/*`` (the ``hz/state`` branch) and ``refs/hz/*`` (leases)
into ``refs/mirror/…``; it never fetches, checks out or pushes ``main`` or
any other branch. One process at a time works in it (an ``flock``).
Discovery's ``team:`` hints list the default branch's files, and the ``git``
source's ``file`` method reads one file of a branch, from another cache
beside it (``inventory``), fetched shallowly.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import FILE_MODE, ensure_private_dir, open_regular, store_io
from hz_kernel.team.git import GitFailed, complaint, git

#: Where the remote's hz refs are mirrored in the cache.
MIRROR = "refs/mirror"
STATE_BRANCH = "refs/heads/hz/state"
FETCH_REFSPECS = (f"+refs/heads/hz/*:{MIRROR}/heads/hz/*", f"+refs/hz/*:{MIRROR}/hz/*")
#: Where the remote's default branch is fetched for discovery (in its own cache).
INVENTORY = "refs/inventory/HEAD"
#: Where another branch or tag is fetched into that cache, by the hash of its name.
INVENTORY_AT = "refs/inventory/at-"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[^/]+@[^/:]+:")


def is_url(remote: str) -> bool:
    """Whether ``remote`` is a URL (``file://``, ``ssh://``, ``user@host:path``), not a path."""
    return _URL.match(remote) is not None


def normalise(remote: str) -> str:
    """A URL (``file://``, ``ssh://``, ``user@host:path``) as given; a path made absolute.

    Links in the path are kept, not followed: the repository keeps its
    identity (and its cache) while a link to it is broken or loops.
    """
    remote = remote.strip()
    if not remote:
        raise HzError("HZS111", "the team repository is empty: give a path or a URL", "team.repo")
    if is_url(remote):
        return remote
    return os.path.abspath(os.path.expanduser(remote))


class TeamRepo:
    """The team repository at ``remote`` as seen from the home at ``home``."""

    def __init__(self, home: Path, remote: str) -> None:
        self.remote = normalise(remote)
        self.id = hashlib.sha256(self.remote.encode()).hexdigest()[:16]
        self.team_dir = home / "team"
        self.git_dir = self.team_dir / f"{self.id}.git"

    def ensure(self) -> None:
        """Create the bare cache once."""
        if (self.git_dir / "HEAD").exists():
            return
        with store_io(self.team_dir):
            ensure_private_dir(self.team_dir)
        git(self.team_dir, "init", "--quiet", "--bare", str(self.git_dir))

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the cache for one operation (a daemon's push and a ``hz team log`` take turns)."""
        self.ensure()
        with _flocked(self.git_dir / "hz.lock"):
            yield

    def fetch(self) -> None:
        """Bring the remote's ``hz/state`` and ``refs/hz/*`` into the mirror (nothing else)."""
        git(self.git_dir, "fetch", "--quiet", "--prune", "--no-tags", self.remote, *FETCH_REFSPECS)

    def mirrored(self, ref: str) -> str | None:
        """The object id the remote's ``ref`` had at the last fetch, or None if it had none."""
        done = git(
            self.git_dir, "rev-parse", "--verify", "--quiet", f"{MIRROR}/{ref[5:]}", check=False
        )
        return done.stdout.decode().strip() or None if done.returncode == 0 else None

    @contextlib.contextmanager
    def snapshot(self, ref: str = "HEAD") -> Iterator[tuple[Path, str]]:
        """The remote's ``ref`` (its default branch, a branch or a tag) fetched shallowly into
        a cache of its own (``<repo-id>.inventory.git``), held for one read: the cache and the
        local ref it is at. The cache of hz's refs never holds the team's history, and nothing
        is ever pushed from this one; one process at a time fetches into it."""
        cache = self.team_dir / f"{self.id}.inventory.git"
        if not (cache / "HEAD").exists():
            with store_io(self.team_dir):
                ensure_private_dir(self.team_dir)
            git(self.team_dir, "init", "--quiet", "--bare", str(cache))
        local = (
            INVENTORY
            if ref == "HEAD"
            else INVENTORY_AT + hashlib.sha256(ref.encode()).hexdigest()[:16]
        )
        with _flocked(cache / "hz.lock"):
            git(cache, "fetch", "--quiet", "--depth=1", "--no-tags", self.remote, f"+{ref}:{local}")
            yield cache, local

    def inventory(self) -> list[str]:
        """The paths of the files on the remote's default branch, for discovery's ``team:``
        hints."""
        with self.snapshot() as (cache, local):
            listed = git(cache, "ls-tree", "-r", "-z", "--name-only", local).stdout
        return sorted(path.decode(errors="replace") for path in filter(None, listed.split(b"\0")))

    def blob(self, data: bytes) -> str:
        """Store ``data`` in the cache; its object id (the same bytes are the same blob)."""
        return git(self.git_dir, "hash-object", "-w", "--stdin", stdin=data).stdout.decode().strip()

    def show(self, spec: str) -> bytes | None:
        """The bytes of ``<commit>:<path>``, or None when there is no such file."""
        done = git(self.git_dir, "cat-file", "blob", spec, check=False)
        return done.stdout if done.returncode == 0 else None

    def files(self, commit: str, under: str) -> dict[str, str]:
        """Every file below ``under`` in ``commit``: its path and blob id."""
        listed = git(self.git_dir, "ls-tree", "-r", "-z", commit, "--", under).stdout.decode()
        files: dict[str, str] = {}
        for entry in filter(None, listed.split("\0")):
            meta, path = entry.split("\t", 1)
            files[path] = meta.split()[2]
        return files

    def blobs(self, paths: list[Path]) -> list[str]:
        """Store the files at ``paths`` in the cache (one git call); their blob ids in order."""
        listing = "".join(f"{path}\n" for path in paths).encode()
        done = git(self.git_dir, "hash-object", "-w", "--stdin-paths", stdin=listing)
        return done.stdout.decode().split()

    def sizes(self, blobs: list[str]) -> list[int]:
        """The size in bytes of each blob (one git call), without reading it."""
        listing = "".join(f"{b}\n" for b in blobs).encode()
        done = git(self.git_dir, "cat-file", "--batch-check=%(objectsize)", stdin=listing)
        return [int(size) for size in done.stdout.split()]

    def contents(self, blobs: list[str]) -> list[bytes]:
        """The bytes of each blob (one git call)."""
        done = git(
            self.git_dir, "cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs).encode()
        )
        out, at, found = done.stdout, 0, []
        for _ in blobs:
            header_end = out.index(b"\n", at)
            size = int(out[at:header_end].split()[2])
            found.append(out[header_end + 1 : header_end + 1 + size])
            at = header_end + 1 + size + 1
        return found

    def push(self, refspecs: list[str], expect: dict[str, str | None]) -> bool:
        """Push ``refspecs`` atomically, without force; True when the remote took them all.

        ``expect`` maps a ref to the object id it must still have on the
        remote (None: it must not exist), git's compare-and-swap
        (``--force-with-lease``). False means another writer got there
        first: fetch and try again. An unreachable remote raises, and so
        does a hook on the remote that refuses the push (retrying cannot
        help; its first line says why).
        """
        leases = [f"--force-with-lease={ref}:{old or ''}" for ref, old in expect.items()]
        args = [
            "push",
            "--porcelain",
            "--atomic",
            "--no-verify",
            "--no-signed",
            *leases,
            self.remote,
            *refspecs,
        ]
        done = git(self.git_dir, *args, check=False)
        if done.returncode == 0:
            return True
        stderr = done.stderr.decode(errors="replace")
        refused = [
            line
            for line in done.stdout.decode(errors="replace").splitlines()
            if line.startswith("!")
        ]
        if any("hook declined" in line for line in refused):
            said = [line[7:].strip() for line in stderr.splitlines() if line.startswith("remote:")]
            reason = next((line for line in said if line), "no reason given")
            raise GitFailed(args, f"the team repository's hook refused the push: {reason}", stderr)
        if refused:
            return False
        raise GitFailed(args, complaint(done.stderr), stderr)

    def set_mirror(self, ref: str, sha: str) -> None:
        """Record what this home just pushed, as a fetch would have."""
        git(self.git_dir, "update-ref", f"{MIRROR}/{ref[5:]}", sha)


@contextlib.contextmanager
def _flocked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created private if missing)."""
    with store_io(path):
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
