"""The MCP head: the kernel's operations as MCP tools, its drafts and transcripts as resources.

Every tool is generated from ``hz_kernel.operations``: one tool per
operation, named after it with ``_`` for ``.`` (``heinzel.list`` is
``heinzel_list``), its input schema the operation's request model and its
output schema the response model, so no command exists on one head only.
A call is validated by the same request model the daemon uses and sent
through a ``KernelClient``: the daemon's in-process client when the daemon
serves ``/mcp``, or the client ``hz mcp`` connected with (the daemon, else
an embedded kernel) over stdio. Refusals are tool errors carrying the
kernel's coded line, never a protocol failure.

Resources: each draft waiting for review (``hz://draft/<key>``, its text
as placed) and any turn's transcript (``hz://transcript/<heinzel>/<turn>``,
JSON), both read through the same operations as every other head.

A message that is not JSON, or not a JSON-RPC message, is answered with one
JSON-RPC error whose message is a coded line (``HZD138``), over stdio
(``Refusing``) and HTTP (``daemon.mcp_endpoint``) alike, and the server goes
on serving.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import anyio
import mcp_types as types
import orjson
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ValidationError

from hz_kernel import operations as ops
from hz_kernel.client import KernelClient
from hz_kernel.daemon.protocol import PROTOCOL_VERSION
from hz_kernel.errors import HzError, field_problem
from hz_kernel.held import Queued

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream

#: The name an MCP client shows for this server.
SERVER_NAME = "hz"
DRAFT_PREFIX = "hz://draft/"
TRANSCRIPT_PREFIX = "hz://transcript/"
#: Operations that lose or hide something the user cannot simply get back.
_DESTRUCTIVE = frozenset({"reject", "heinzel.retire", "heinzel.forget", "heinzel.prune"})
_INSTRUCTIONS = (
    "hz runs heinzels: durable agents that each keep one document true under a contract. "
    "heinzel_list shows them, drafts the drafts waiting for review, approve and reject decide "
    "a draft, heinzel_chat sends one a message, heinzel_wake runs a turn now. A refused call "
    "answers with a coded line (e.g. HZS010: …) that says what to do."
)


MALFORMED = "HZD138"


def tool_name(operation: ops.Operation[Any, Any]) -> str:
    """The MCP tool of an operation: its wire name with ``_`` for ``.``."""
    return operation.name.replace(".", "_")


#: Every tool, by name: the operations table, nothing more and nothing less (but what only
#: the cockpit's own windows use, which the table marks).
TOOLS: dict[str, ops.Operation[Any, Any]] = {
    tool_name(op): op for op in ops.OPERATIONS.values() if not op.cockpit_only
}


def _schema(model: type[BaseModel], mode: str) -> dict[str, Any]:
    schema = model.model_json_schema(mode="validation" if mode == "input" else "serialization")
    schema.setdefault("type", "object")
    if mode == "input" and issubclass(model, ops.Request):
        # An agent reads each argument's description: every one has it, in plain words.
        for name, prop in schema.get("properties", {}).items():
            prop["description"] = ops.meaning(model, name)
    return schema


def describe_tool(name: str, operation: ops.Operation[Any, Any]) -> types.Tool:
    """One operation as an MCP tool, with hints on whether it changes state."""
    return types.Tool(
        name=name,
        description=ops.describe(operation),
        input_schema=_schema(operation.request, "input"),
        output_schema=_schema(operation.response, "output"),
        annotations=types.ToolAnnotations(
            read_only_hint=not operation.writes,
            destructive_hint=operation.name in _DESTRUCTIVE,
            idempotent_hint=not operation.writes,
            open_world_hint=False,
        ),
    )


def _failed(line: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=line)], is_error=True)


def _answer(data: dict[str, Any]) -> types.CallToolResult:
    text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)


async def call_operation(
    client: KernelClient, name: str, arguments: dict[str, Any] | None
) -> types.CallToolResult:
    """Run the operation behind tool ``name`` with ``arguments``; refusals as tool errors."""
    operation = TOOLS.get(name)
    if operation is None:
        return _failed(f"HZD011: {name[:80]}: no such tool (heinzel_list, drafts, approve, …)")
    try:
        request = operation.request.model_validate(arguments or {})
    except ValidationError as exc:
        # Every problem, not the first: an agent that misnamed an argument ("name" for
        # "ref") learns both that "ref" is missing and that "name" is not one.
        problems = [
            f"{'.'.join(str(part) for part in error['loc']) or name}: {field_problem(error)}"
            for error in exc.errors()[:5]
        ]
        return _failed("HZD010: " + "; ".join(problems))
    try:
        answer = await client.call(operation, request)
    except Queued as queued:
        return _answer(queued.report())
    except HzError as exc:
        return _failed(exc.one_line())
    return _answer(answer.model_dump(mode="json"))


def draft_uri(key: str) -> str:
    return DRAFT_PREFIX + quote(key, safe="")


def transcript_uri(heinzel: str, turn: str) -> str:
    return f"{TRANSCRIPT_PREFIX}{quote(heinzel, safe='')}/{quote(turn, safe='')}"


async def _drafts(client: KernelClient) -> list[types.Resource]:
    listed = await client.call(ops.DRAFTS, ops.Empty())
    return [
        types.Resource(
            uri=draft_uri(draft.key),
            name=f"{draft.heinzel_name or draft.heinzel}: {draft.asset or draft.key}",
            description=f"a draft {draft.status}, placed {draft.placed_at or 'earlier'}",
            mime_type="text/markdown",
        )
        for draft in listed.items
    ]


async def read_resource(client: KernelClient, uri: str) -> types.TextResourceContents:
    """A draft's text as placed, or a turn's transcript as JSON (``HzError`` if unknown)."""
    if uri.startswith(DRAFT_PREFIX):
        key = unquote(uri.removeprefix(DRAFT_PREFIX))
        review = await client.call(ops.REVIEW, ops.DraftKey(key=key))
        return types.TextResourceContents(
            uri=uri, mime_type="text/markdown", text=review.placed_text
        )
    if uri.startswith(TRANSCRIPT_PREFIX):
        heinzel, _, turn = uri.removeprefix(TRANSCRIPT_PREFIX).partition("/")
        try:
            request = ops.TranscriptRequest(ref=unquote(heinzel), turn=unquote(turn) or None)
        except ValidationError as exc:
            raise HzError("HZD010", field_problem(exc.errors()[0]), uri[:200]) from None
        transcript = await client.call(ops.TRANSCRIPT, request)
        data = orjson.dumps(transcript.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
        return types.TextResourceContents(uri=uri, mime_type="application/json", text=data.decode())
    raise HzError(
        "HZD011", "no such resource (hz://draft/KEY, hz://transcript/HEINZEL/TURN)", uri[:200]
    )


_TEMPLATES = [
    types.ResourceTemplate(
        uri_template=DRAFT_PREFIX + "{key}",
        name="draft",
        description="A draft's text as placed in its document (the key as drafts lists it)",
        mime_type="text/markdown",
    ),
    types.ResourceTemplate(
        uri_template=TRANSCRIPT_PREFIX + "{heinzel}/{turn}",
        name="transcript",
        description="One turn whole: cause, inputs, context, model requests, outcome, effects",
        mime_type="application/json",
    ),
]


def refusal(exc: Exception, place: str) -> types.JSONRPCError:
    """The answer to a message the SDK could not read (``exc``, from parsing it as JSON-RPC):
    a parse error or an invalid request, its message one coded line, the id unknown (null)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or errors[0]["type"] == "json_invalid":
        why = errors[0]["msg"] if errors else type(exc).__name__
        code, message = types.PARSE_ERROR, f"the message is not JSON ({why})"
    else:
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"])
        message = (
            "the message is not a JSON-RPC 2.0 request, notification or response "
            f"({where + ': ' if where else ''}{first['msg']})"
        )
        code = types.INVALID_REQUEST
    return _error(code, HzError(MALFORMED, message[:300], place))


def _error(code: int, error: HzError, id_: types.RequestId | None = None) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=id_, error=types.ErrorData(code=code, message=error.one_line())
    )


def too_large(limit: int, place: str) -> types.JSONRPCError:
    """The answer to a message over ``limit`` bytes, never read whole (HZD012)."""
    return _error(
        types.INVALID_REQUEST, HzError("HZD012", f"request body over {limit} bytes", place)
    )


def screen(message: types.JSONRPCMessage, place: str) -> types.JSONRPCError | None:
    """The coded answer to a message the SDK reads but would answer without a code or not at
    all: a request whose ``id`` is null or an object (read as a notification, so never
    answered) and a ``tools/call`` whose ``arguments`` is not an object."""
    if isinstance(message, types.JSONRPCNotification) and not message.method.startswith(
        "notifications/"
    ):
        why = f"{message.method[:80]}: a request needs an id that is a string or a number"
        return _error(types.INVALID_REQUEST, HzError(MALFORMED, why, place))
    if isinstance(message, types.JSONRPCRequest) and message.method == "tools/call":
        arguments = (message.params or {}).get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            why = "must be an object of the tool's arguments by name"
            return _error(types.INVALID_PARAMS, HzError("HZD010", why, "arguments"), message.id)
    return None


def read_message(raw: bytes, place: str) -> types.JSONRPCError | None:
    """Why ``raw`` is no JSON-RPC message the server should see (the coded answer), or None
    when it is one."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
    except ValidationError as exc:
        return refusal(exc, place)
    return screen(message, place)


class Refusing:
    """A transport's read stream whose unreadable messages (the exceptions the transport
    passes on) and those ``screen`` refuses are answered on ``write`` with a coded error and
    never reach the server, which would otherwise drop them without a word."""

    def __init__(
        self,
        read: ReadStream[SessionMessage | Exception],
        write: WriteStream[SessionMessage],
        place: str,
    ) -> None:
        self.read = read
        self.write = write
        self.place = place

    @property
    def last_context(self) -> object:
        """The sender's context of the last message, as the server's dispatcher reads it."""
        return getattr(self.read, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self.read.receive()
            refused = (
                refusal(item, self.place)
                if isinstance(item, Exception)
                else screen(item.message, self.place)
            )
            if refused is None:
                return item
            await self.write.send(SessionMessage(refused))

    async def aclose(self) -> None:
        await self.read.aclose()

    def __aiter__(self) -> Refusing:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Refusing:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def build_server(client: KernelClient) -> Server[Any]:
    """An MCP server whose every request goes to ``client``."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[describe_tool(n, op) for n, op in TOOLS.items()])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await call_operation(client, params.name, params.arguments)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await _drafts(client))

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=_TEMPLATES)

    async def read(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            contents = await read_resource(client, str(params.uri))
        except HzError as exc:
            raise MCPError(types.INVALID_PARAMS, exc.one_line()) from None
        return types.ReadResourceResult(contents=[contents])

    return Server(
        SERVER_NAME,
        version=str(PROTOCOL_VERSION),
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read,
    )
