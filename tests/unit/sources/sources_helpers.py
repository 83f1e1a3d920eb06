"""Shared pieces of the source tests: a pinned clock, dated git repositories, web pages."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

NOW = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)


class GitRepo:
    """A throwaway repository whose commits carry the dates a test chooses."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, when: datetime | None = None) -> str:
        stamp = (when or NOW).isoformat()
        env = {
            **os.environ,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_AUTHOR_NAME": "Ada",
            "GIT_AUTHOR_EMAIL": "ada@example.invalid",
            "GIT_COMMITTER_NAME": "Ada",
            "GIT_COMMITTER_EMAIL": "ada@example.invalid",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }
        done = subprocess.run(
            ["git", "-C", str(self.path), *args], env=env, capture_output=True, check=True
        )
        return done.stdout.decode().strip()

    def commit(self, message: str, days_ago: float) -> str:
        when = NOW - timedelta(days=days_ago)
        self.git("commit", "-q", "--allow-empty", "-m", message, when=when)
        return self.git("rev-parse", "HEAD")

    def merge(self, branch: str, message: str, days_ago: float) -> str:
        when = NOW - timedelta(days=days_ago)
        self.git("merge", "-q", "--no-ff", "-m", message, branch, when=when)
        return self.git("rev-parse", "HEAD")


@dataclass
class Page:
    body: bytes
    etag: str | None
    status: int = 200


@dataclass
class WebServer:
    """A real HTTP server on 127.0.0.1 whose pages a test edits while it runs."""

    base_url: str
    pages: dict[str, Page] = field(default_factory=dict)
    seen: list[dict[str, str]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"
