"""The ``http`` source: a conditional GET whose body is one facet.

The previous result's ETag travels back as ``If-None-Match``, so an
unchanged page costs the server a 304 and the tick nothing: the result is
marked ``not_modified`` and carries the previous facets. Proxy variables
and netrc are ignored (``trust_env=False``) so a fetch goes only where the
contract says.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from hz_kernel.adapters.sources.base import (
    OUTPUT_CAP_BYTES,
    FetchResult,
    SourceRequest,
    cap_text,
    sha256_hex,
)
from hz_kernel.errors import HzError

if TYPE_CHECKING:
    import httpx

HTTP_TIMEOUT_SECONDS = 10.0
MAX_REDIRECTS = 5
USER_AGENT = "hz-source/1"


class GetArgs(BaseModel):
    """An absolute ``http`` or ``https`` URL."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    url: str = Field(min_length=1)


def public_place(url: httpx.URL) -> str:
    """The URL without credentials or query, safe to print in an error line."""
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}{url.path}"


class HttpSource:
    """GETs a URL, conditionally when a previous result carries an ETag."""

    kind = "http"
    methods = frozenset({"get"})
    replay_safe = True

    def __init__(self, timeout: float = HTTP_TIMEOUT_SECONDS) -> None:
        self.timeout = timeout

    def fetch(
        self, request: SourceRequest, *, now: datetime, previous: FetchResult | None = None
    ) -> FetchResult:
        # Imported here, not with the kernel: every embedded command loads this module, and
        # only a tick's fetch needs httpx (without its command line, which hz never runs).
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
        import httpx

        args = request.parse_args(GetArgs)
        try:
            url = httpx.URL(args.url)
        except httpx.InvalidURL as exc:
            raise HzError("HZT011", f"bad url: {exc}", request.describe()) from None
        if url.scheme not in ("http", "https") or not url.host:
            raise HzError(
                "HZT011", "the url must be absolute and use http or https", request.describe()
            )
        place = public_place(url)
        headers = {"User-Agent": USER_AGENT}
        if previous is not None and previous.cursor:
            headers["If-None-Match"] = previous.cursor
        try:
            with (
                httpx.Client(
                    trust_env=False,
                    timeout=self.timeout,
                    follow_redirects=True,
                    max_redirects=MAX_REDIRECTS,
                ) as client,
                client.stream("GET", url, headers=headers) as response,
            ):
                if response.status_code == httpx.codes.NOT_MODIFIED:
                    return self._unchanged(request, response, previous, now, place)
                if not response.is_success:
                    raise HzError(
                        "HZT050",
                        f"the server answered {response.status_code} {response.reason_phrase}",
                        place,
                    )
                body = bytearray()
                for chunk in response.iter_bytes():
                    body.extend(chunk)
                    if len(body) > OUTPUT_CAP_BYTES:
                        break
                etag = response.headers.get("etag")
                encoding = response.encoding or "utf-8"
        except httpx.TimeoutException:
            raise HzError("HZT052", f"no answer within {self.timeout:g} s", place) from None
        except httpx.TooManyRedirects:
            raise HzError("HZT050", f"more than {MAX_REDIRECTS} redirects", place) from None
        except httpx.HTTPError as exc:
            raise HzError("HZT051", f"the request failed: {exc}", place) from None
        kept, text = cap_text(bytes(body), encoding=encoding)
        return FetchResult(
            request=request,
            facets={"body": sha256_hex(kept)},
            content={"body": text},
            cursor=etag,
            as_of=now,
        )

    @staticmethod
    def _unchanged(
        request: SourceRequest,
        response: httpx.Response,
        previous: FetchResult | None,
        now: datetime,
        place: str,
    ) -> FetchResult:
        """A 304: nothing new, so the previous facets and content stand."""
        if previous is None:
            raise HzError("HZT050", "the server answered 304 to an unconditional request", place)
        return FetchResult(
            request=request,
            facets=dict(previous.facets),
            content=dict(previous.content),
            cursor=response.headers.get("etag") or previous.cursor,
            as_of=now,
            not_modified=True,
        )
