"""Writes that find a heinzel's spine held by another process go through its inbox.

Another process may hold a spine for a while: an ``hz --embedded`` cockpit
running a turn, or ``hz tick``. A command of a one-shot embedded kernel
that finds the spine held (``HZS010``) is not refused: ``QueueingClient``
admits it to the heinzel's inbox as an ``operation`` request (on disk, with
the inbox's marker) and raises ``Queued``, which the CLI reports as success.
The holder's next tick, or the next kernel that ticks, carries it out with
``deliver_queued`` and then removes the request, so it runs once; should a
crash fall between the two, the commands that can queue are idempotent by
their own state and keys (a stop with no turn, a pause of a paused heinzel,
a retry or a report keyed by its request id, which queuing gives it when the
caller did not). ``chat`` and ``wake`` queue by themselves
(``status: queued``) and are delivered as turns by the tick.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.operations import Operation, Req, Resp
from hz_kernel.store.inbox import MARKER_NAME, Inbox, InboxRequest
from hz_kernel.store.locks import SpineBusy

if TYPE_CHECKING:
    from hz_kernel.tick.report import TickProblem

#: The commands on one heinzel that queue when its spine is held (the rest are refused).
QUEUEABLE = frozenset(
    operation.name
    for operation in (
        ops.APPROVE,
        ops.REJECT,
        ops.AMEND,
        ops.PAUSE,
        ops.UNPAUSE,
        ops.RETIRE,
        ops.UNRETIRE,
        ops.RENAME,
        ops.RESUME,
        ops.STOP,
        ops.RETRY,
        ops.ANSWER,
        ops.DISMISS,
        ops.FORGET,
        ops.REPORT,
    )
)


class Queued(Exception):
    """A command admitted to the inbox because another process holds the heinzel's spine."""

    def __init__(self, request: InboxRequest, holder: int | None) -> None:
        super().__init__(request.request_id)
        self.request = request
        self.holder = holder

    def line(self, name: str) -> str:
        """What the CLI prints: what was queued, as which request, and who will carry it out."""
        who = f"process {self.holder}" if self.holder else "another process"
        verb = (self.request.operation or "").rpartition(".")[2]
        return (
            f"{name}: {verb} queued as request {self.request.request_id}; {who} holds this "
            "heinzel and carries it out at its next tick"
        )

    def report(self) -> dict[str, Any]:
        return {
            "status": "queued",
            "heinzel": self.request.heinzel,
            "request_id": self.request.request_id,
            "operation": self.request.operation,
            "holder": self.holder,
        }


def queue(
    home: Home, heinzel_id: str, operation: Operation[Any, Any], request: Any
) -> InboxRequest:
    """Admit ``operation`` with ``request`` to the heinzel's inbox, for the next tick; a
    request that takes a request id and has none gets the inbox request's, so delivering it
    again after a crash does nothing twice."""
    from ulid import ULID  # its import reads its own metadata: not on every start's path

    request_id = str(ULID())
    arguments = request.model_dump(mode="json")
    if "request_id" in arguments and arguments["request_id"] is None:
        arguments["request_id"] = request_id
    stored, _ = Inbox(home.heinzel_dir(heinzel_id)).admit(
        InboxRequest(
            request_id=request_id,
            heinzel=heinzel_id,
            kind="operation",
            operation=operation.name,
            arguments=arguments,
        )
    )
    return stored


class QueueingClient(LocalClient):
    """A one-shot embedded kernel whose writes to a spine held elsewhere raise ``Queued``."""

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        try:
            return await super().call(operation, request)
        except SpineBusy as busy:
            heinzel_id = Path(busy.place or "").parent.name
            handing_back = getattr(request, "hand_back", False)  # its answer is the messages
            if operation.name not in QUEUEABLE or handing_back or not MARKER_NAME.match(heinzel_id):
                raise
            stored = queue(self.kernel.home, heinzel_id, operation, request)
            raise Queued(stored, busy.holder) from None


async def deliver_queued(kernel: Any, heinzel_ids: set[str]) -> list[TickProblem]:
    """Carry out the ``operation`` requests in these heinzels' inboxes, oldest first.

    A request whose spine is still held elsewhere stays for a later tick
    (and so do the ones after it, to keep their order). One that fails is
    reported as the tick's problem and removed: it was carried out, and
    its answer is that error.
    """
    from hz_kernel.tick.report import TickProblem  # the tick's models: not on the CLI's start

    problems: list[TickProblem] = []
    for heinzel_id in sorted(heinzel_ids):
        inbox = Inbox(kernel.home.heinzel_dir(heinzel_id))
        for request in inbox.all():
            if request.kind != "operation":
                continue
            try:
                await _perform(kernel, request)
            except SpineBusy:
                break
            except HzError as exc:
                problems.append(
                    TickProblem(
                        code=exc.code,
                        message=f"queued {request.operation} {request.request_id}: {exc.message}",
                        place=exc.place,
                        heinzel=heinzel_id,
                    )
                )
            inbox.consume(request.request_id)
    return problems


async def _perform(kernel: Any, request: InboxRequest) -> None:
    operation = ops.OPERATIONS.get(request.operation or "")
    if operation is None or operation.name not in QUEUEABLE:
        raise HzError("HZU110", "not a command that can be queued", str(request.operation))
    arguments = dict(request.arguments)
    if "request_id" in operation.request.model_fields and not arguments.get("request_id"):
        # A retry or an answer is keyed by its request id: carried out again, it runs once.
        arguments["request_id"] = f"{request.request_id}-run"
    try:
        parsed = operation.request.model_validate(arguments)
    except ValidationError as exc:
        message = f"a queued request that cannot be read: {exc.errors()[0]['msg']}"
        raise HzError("HZU110", message, request.request_id) from None
    method = getattr(kernel, operation.handler)
    await method(**{name: getattr(parsed, name) for name in type(parsed).model_fields})
