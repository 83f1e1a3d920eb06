"""The wire of a real daemon: token, Host and Origin checks, protocol, typed errors, one table."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from daemon_helpers import discovery, hz, make_home, one_coded_line

from hz_kernel.client import LocalClient
from hz_kernel.daemon.app import error_status
from hz_kernel.daemon.protocol import (
    EVENTS_PATH,
    HEALTH_PATH,
    OP_PREFIX,
    PROTOCOL_HEADER,
    PROTOCOL_VERSION,
    SHUTDOWN_PATH,
)
from hz_kernel.errors import HzError, UsageError
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.kernel import Kernel
from hz_kernel.operations import OPERATIONS, SHOW, HeinzelRef

#: Values for the required fields of read operations' requests (a new one must be added here).
SAMPLE_FIELDS: dict[str, Any] = {"ref": "h1", "key": "hz-00000000000000000000000000@nothing"}

ROUTES = [
    ("GET", HEALTH_PATH),
    ("GET", EVENTS_PATH),
    ("POST", OP_PREFIX + "heinzel.list"),
    ("POST", SHUTDOWN_PATH),
]


async def _answer(client: HttpClient | LocalClient, op: Any, request: Any) -> object:
    """What a client answered, as comparable data: the response, or the refusal's kind and line."""
    try:
        response = await client.call(op, request)
    except HzError as refused:
        return (type(refused).__name__, refused.one_line())
    assert type(response) is op.response
    return response.model_dump(mode="json")


@pytest.fixture
async def raw(shared_home: Home) -> AsyncIterator[httpx.AsyncClient]:
    """A bare HTTP client aimed at the shared daemon, carrying no credentials of its own."""
    async with httpx.AsyncClient(
        base_url=discovery(shared_home).address, trust_env=False, timeout=10
    ) as client:
        yield client


def _ours(shared_home: Home, **changes: str) -> dict[str, str]:
    headers = {
        "authorization": f"Bearer {discovery(shared_home).token}",
        PROTOCOL_HEADER: str(PROTOCOL_VERSION),
    }
    return headers | changes


def _code(response: httpx.Response) -> str:
    return str(response.json()["code"])


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_every_route_needs_the_token(
    shared_home: Home, raw: httpx.AsyncClient, method: str, path: str
) -> None:
    protocol = {PROTOCOL_HEADER: str(PROTOCOL_VERSION)}
    missing = await raw.request(method, path, headers=protocol)
    assert missing.status_code == 401 and _code(missing) == "HZD030"
    token = discovery(shared_home).token
    wrong = await raw.request(
        method, path, headers=protocol | {"authorization": f"Bearer {token[:-1]}x"}
    )
    assert wrong.status_code == 401 and _code(wrong) == "HZD030"
    assert (await raw.get(HEALTH_PATH, headers=_ours(shared_home))).status_code == 200


async def test_foreign_host_and_origin_are_refused(
    shared_home: Home, raw: httpx.AsyncClient
) -> None:
    """Issue 13 item 5: any loopback Host with any port passes (``ssh -L 9000:…`` names port
    9000), a foreign name does not (DNS rebinding)."""
    port = discovery(shared_home).address.rsplit(":", 1)[1]
    for host in (
        "evil.example",
        f"evil.example:{port}",
        f"10.0.0.1:{port}",
        f"evil.example@127.0.0.1:{port}",
        "127.0.0.1:port",
        "",
    ):
        refused = await raw.get(HEALTH_PATH, headers=_ours(shared_home, host=host))
        assert refused.status_code == 403 and _code(refused) == "HZD031", host
    for host in (f"localhost:{port}", "127.0.0.1:9000", "localhost:1", "[::1]:9000"):
        accepted = await raw.get(HEALTH_PATH, headers=_ours(shared_home, host=host))
        assert accepted.is_success, host
    for origin in ("http://evil.example", "https://127.0.0.1.evil.example", "null"):
        refused = await raw.get(HEALTH_PATH, headers=_ours(shared_home, origin=origin))
        assert refused.status_code == 403 and _code(refused) == "HZD032", origin
    local = await raw.get(HEALTH_PATH, headers=_ours(shared_home, origin="http://localhost:5173"))
    assert local.status_code == 200


async def test_another_protocol_gets_a_typed_refusal_and_the_daemon_is_left_alone(
    shared_home: Home, raw: httpx.AsyncClient
) -> None:
    for version in ("99", ""):
        refused = await raw.get(
            HEALTH_PATH, headers=_ours(shared_home, **{PROTOCOL_HEADER: version})
        )
        assert refused.status_code == 400 and _code(refused) == "HZD020"
    before = discovery(shared_home)
    async with HttpClient(before, protocol=PROTOCOL_VERSION + 1) as newer:
        with pytest.raises(HzError) as refusal:
            await newer.call(SHOW, HeinzelRef(ref="h0"))
    assert refusal.value.code == "HZD020" and "protocol" in refusal.value.message
    async with HttpClient(before) as client:
        assert (await client.health()).pid == before.pid


async def test_bad_requests_get_typed_errors(shared_home: Home, raw: httpx.AsyncClient) -> None:
    headers = _ours(shared_home)
    empty_ref = await raw.post(OP_PREFIX + "heinzel.show", json={"ref": ""}, headers=headers)
    assert empty_ref.status_code == 422 and empty_ref.json()["place"] == "ref"
    assert _code(empty_ref) == "HZD010"
    unknown_field = await raw.post(OP_PREFIX + "heinzel.list", json={"nope": 1}, headers=headers)
    assert unknown_field.status_code == 422 and unknown_field.json()["place"] == "nope"
    not_json = await raw.post(OP_PREFIX + "heinzel.list", content=b"{", headers=headers)
    assert not_json.status_code == 422 and _code(not_json) == "HZD010"
    for op, body in (
        ("heinzel.chat", {"ref": "h0", "message": "hi"}),
        ("heinzel.wake", {"ref": "h0"}),
        ("heinzel.retry", {"ref": "h0"}),
        ("heinzel.answer", {"ref": "h0", "message": "hi"}),
        ("reject", {"ref": "h0@x", "reason": "no"}),
    ):
        for bad_id in ("../../escape", "a b", "", "-leading", "x\n"):
            refused = await raw.post(
                OP_PREFIX + op, json=body | {"request_id": bad_id}, headers=headers
            )
            # issue 13 item 8: a malformed request id is a bad field (422), never a 500
            assert refused.status_code == 422, (op, bad_id, refused.text)
            assert _code(refused) == "HZD010" and refused.json()["place"] == "request_id"
    assert error_status(HzError("HZS030", "bad request id")) == 400
    assert error_status(HzError("HZS034", "request id used for other content")) == 409
    too_big = await raw.post(OP_PREFIX + "heinzel.show", content=b" " * (2 << 20), headers=headers)
    assert too_big.status_code == 413 and _code(too_big) == "HZD012"
    for path in (OP_PREFIX + "heinzel.nothing", "/v1/nowhere", "/"):
        missing = await raw.post(path, json={}, headers=headers)
        assert missing.status_code in (404, 405) and _code(missing) == "HZD011", path


async def test_kernel_errors_cross_the_wire_with_their_code(
    shared_home: Home, tmp_path: Any, raw: httpx.AsyncClient
) -> None:
    unknown = await raw.post(
        OP_PREFIX + "heinzel.show", json={"ref": "nobody"}, headers=_ours(shared_home)
    )
    assert unknown.status_code == 404 and _code(unknown) == "HZU010"
    async with HttpClient(discovery(shared_home)) as client:
        with pytest.raises(UsageError) as remote:
            await client.call(SHOW, HeinzelRef(ref="nobody"))
    embedded_home = make_home(tmp_path / "embedded", heinzels=1)
    local = LocalClient(await Kernel.open(embedded_home))
    try:
        with pytest.raises(UsageError) as here:
            await local.call(SHOW, HeinzelRef(ref="nobody"))
    finally:
        await local.close()
    assert remote.value.one_line() == here.value.one_line()
    via_daemon = hz(shared_home.root, "heinzel", "show", "nobody")
    embedded = hz(embedded_home.root, "heinzel", "show", "nobody")
    assert via_daemon.returncode == embedded.returncode == 2
    assert one_coded_line(via_daemon, "HZU010") == one_coded_line(embedded, "HZU010")


async def test_http_and_local_clients_agree_on_every_read_operation(shared_home: Home) -> None:
    reads = [op for op in OPERATIONS.values() if not op.writes]
    assert reads, "the table has read operations"
    local = LocalClient(await Kernel.open(shared_home))
    try:
        async with HttpClient(discovery(shared_home)) as remote:
            for op in reads:
                fields = {k: v for k, v in SAMPLE_FIELDS.items() if k in op.request.model_fields}
                request = op.request.model_validate(fields)
                over_http, embedded = (
                    await _answer(remote, op, request),
                    await _answer(local, op, request),
                )
                assert over_http == embedded, op.name
    finally:
        await local.close()


async def test_issue13_item8_a_malformed_turn_id_is_a_bad_field_never_a_path(
    shared_home: Home, raw: httpx.AsyncClient
) -> None:
    """issue 13 item 8: ids on the wire are checked; a turn id never walks out of ``turns/``."""
    escape = shared_home.root / "heinzel" / "x.jsonl"
    escape.write_text('{"type": "chunk", "text": "not a body"}\n')
    for bad in ("../../x", "../x", "a b", "01M8S6EN3YTZFZK72D8PJDHFH6X"):
        refused = await raw.post(
            OP_PREFIX + "turn.body", json={"ref": "h0", "turn": bad}, headers=_ours(shared_home)
        )
        assert refused.status_code == 422, (bad, refused.text)
        assert _code(refused) == "HZD010" and refused.json()["place"] == "turn"


def test_a_listing_beside_the_daemon_asks_it_without_the_http_stack(shared_home: Home) -> None:
    """``hz heinzel list --json`` beside a daemon asks it in one request on asyncio's own
    streams (``hz_kernel.exchange``): httpx and its stack are loaded for the feed alone."""
    probe = (
        "import contextlib, io, json, sys\n"
        "from hz_tui.entry import main\n"
        "sys.argv = ['hz', 'heinzel', 'list', '--json']\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    code = main()\n"
        "heavy = ('httpx', 'httpx_sse', 'httpcore', 'anyio', 'h11', 'hz_kernel.kernel')\n"
        "loaded = sorted(m for m in sys.modules if m.partition('.')[0] in heavy or m in heavy)\n"
        "asked = 'hz_kernel.exchange' in sys.modules\n"
        "print(code, bool(json.loads(out.getvalue())), asked, loaded)\n"
    )
    env = {**os.environ, "HZ_HOME": str(shared_home.root)}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.strip() == "0 True True []", done.stdout + done.stderr
