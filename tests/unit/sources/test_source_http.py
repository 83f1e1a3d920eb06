"""The http source against a real server on 127.0.0.1 that speaks ETag and 304."""

from __future__ import annotations

import hashlib
import socket
from datetime import timedelta

import pytest
from sources_helpers import NOW, Page, WebServer

from hz_kernel.adapters.sources import HttpSource, SourceRequest, default_registry
from hz_kernel.errors import HzError


def get(url: str) -> SourceRequest:
    return SourceRequest(source="http", method="get", args={"url": url})


def test_a_body_facet_and_the_etag_as_cursor(web_server: WebServer) -> None:
    web_server.pages["/status"] = Page(body="all green ✓".encode(), etag='"v1"')
    result = HttpSource().fetch(get(web_server.url("/status")), now=NOW, previous=None)
    assert result.facets == {"body": hashlib.sha256("all green ✓".encode()).hexdigest()}
    assert result.content == {"body": "all green ✓"}
    assert result.cursor == '"v1"'
    assert not result.not_modified
    assert "If-None-Match" not in web_server.seen[-1]


def test_a_304_keeps_the_previous_facets(web_server: WebServer) -> None:
    web_server.pages["/status"] = Page(body=b"first", etag='"v1"')
    source = HttpSource()
    request = get(web_server.url("/status"))
    first = source.fetch(request, now=NOW, previous=None)
    later = NOW + timedelta(minutes=5)
    again = source.fetch(request, now=later, previous=first)
    assert web_server.seen[-1]["If-None-Match"] == '"v1"'
    assert again.not_modified
    assert again.facets == first.facets and again.content == first.content
    assert again.cursor == '"v1"' and again.as_of == later
    web_server.pages["/status"] = Page(body=b"second", etag='"v2"')
    changed = source.fetch(request, now=later, previous=again)
    assert not changed.not_modified
    assert changed.cursor == '"v2"'
    assert changed.fingerprint("body") != first.fingerprint("body")


def test_a_previous_result_of_another_request_is_not_used(web_server: WebServer) -> None:
    web_server.pages["/a"] = Page(body=b"a", etag='"same"')
    web_server.pages["/b"] = Page(body=b"b", etag='"same"')
    registry = default_registry()
    first = registry.fetch(get(web_server.url("/a")), now=NOW)
    other = registry.fetch(get(web_server.url("/b")), now=NOW, previous=first)
    assert "If-None-Match" not in web_server.seen[-1]
    assert other.content == {"body": "b"} and not other.not_modified


def test_without_an_etag_every_fetch_is_full(web_server: WebServer) -> None:
    web_server.pages["/plain"] = Page(body=b"plain", etag=None)
    source = HttpSource()
    first = source.fetch(get(web_server.url("/plain")), now=NOW, previous=None)
    assert first.cursor is None
    source.fetch(get(web_server.url("/plain")), now=NOW, previous=first)
    assert "If-None-Match" not in web_server.seen[-1]


def test_http_errors_carry_the_status(web_server: WebServer) -> None:
    web_server.pages["/broken"] = Page(body=b"oops", etag=None, status=500)
    for path, status in (("/missing", "404"), ("/broken", "500")):
        with pytest.raises(HzError) as caught:
            HttpSource().fetch(get(web_server.url(path) + "?token=s3cret"), now=NOW, previous=None)
        assert caught.value.code == "HZT050"
        assert status in caught.value.message
        assert caught.value.place == web_server.url(path)


def test_a_refused_connection_and_a_timeout() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(HzError) as caught:
        HttpSource().fetch(get(f"http://127.0.0.1:{port}/"), now=NOW, previous=None)
    assert caught.value.code == "HZT051"


def test_a_slow_server_times_out(web_server: WebServer) -> None:
    web_server.pages["/slow"] = Page(body=b"late", etag=None)
    with pytest.raises(HzError) as caught:
        HttpSource(timeout=0.3).fetch(get(web_server.url("/slow")), now=NOW, previous=None)
    assert caught.value.code == "HZT052"


@pytest.mark.parametrize("url", ["ftp://example.org/file", "not a url", "/relative", "http://"])
def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(HzError) as caught:
        HttpSource().fetch(get(url), now=NOW, previous=None)
    assert caught.value.code == "HZT011"
