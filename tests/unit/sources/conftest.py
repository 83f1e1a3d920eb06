"""Real fixtures for the source tests: git repositories with pinned dates and a local web server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sources_helpers import GitRepo, WebServer


class QuietServer(ThreadingHTTPServer):
    """A client that gave up (the timeout test) is expected, not an error worth printing."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        return None


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def web_server() -> Iterator[WebServer]:
    state = WebServer(base_url="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            state.seen.append({"path": path, **dict(self.headers.items())})
            if path == "/slow":
                threading.Event().wait(2.0)
            page = state.pages.get(path)
            if page is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if page.etag is not None and self.headers.get("If-None-Match") == page.etag:
                self.send_response(304)
                self.send_header("ETag", page.etag)
                self.end_headers()
                return
            self.send_response(page.status)
            if page.etag is not None:
                self.send_header("ETag", page.etag)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(page.body)))
            self.end_headers()
            self.wfile.write(page.body)

        def log_message(self, format: str, *args: object) -> None:
            """Keep test output quiet."""

    server = QuietServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
