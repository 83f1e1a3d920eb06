"""The operations table: every command of the kernel as a request and a response model.

This table is the single source of the kernel's interface. The in-process
client dispatches on it, the daemon builds its routes from it and the HTTP
client its calls, so no command can exist on one side of the wire only.
Each operation names the ``Kernel`` method that serves it; the request's
fields are that method's keyword arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from hz_kernel import api

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)


class Request(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class Operation(Generic[Req, Resp]):
    """One command: its wire name, shapes, the kernel method and whether it changes state."""

    name: str
    request: type[Req]
    response: type[Resp]
    handler: str
    writes: bool
    summary: str

    def wrap(self, result: Any) -> Resp:
        """Turn what the kernel method returned into the response model."""
        if isinstance(result, self.response):
            return result
        if isinstance(result, list):
            return self.response.model_validate({"items": result})
        return self.response.model_validate(result)


class Empty(Request):
    pass


class Done(BaseModel):
    ok: bool = True


class HeinzelRef(Request):
    ref: str = Field(min_length=1, max_length=200)


class ListRequest(Request):
    state: str | None = None
    artifact: str | None = None
    contract: str | None = None
    where: dict[str, str] | None = None


class VerifyRequest(Request):
    ref: str | None = None
    accept: bool = False


class VerifyList(BaseModel):
    items: list[api.VerifyReport]


LIST = Operation(
    "heinzel.list", ListRequest, api.HeinzelList, "list_heinzels", False, "List heinzels"
)
SHOW = Operation("heinzel.show", HeinzelRef, api.HeinzelDetail, "show", False, "Show one heinzel")
VERIFY = Operation(
    "heinzel.verify", VerifyRequest, VerifyList, "verify", True, "Check spines' hash chains"
)
REINDEX = Operation(
    "heinzel.reindex", Empty, api.ReindexReport, "reindex", True, "Rebuild the index"
)
PRUNE = Operation("heinzel.prune", Empty, api.PruneReport, "prune", True, "Delete expired bodies")

OPERATIONS: dict[str, Operation[Any, Any]] = {
    op.name: op for op in (LIST, SHOW, VERIFY, REINDEX, PRUNE)
}
