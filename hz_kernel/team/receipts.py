"""Receipts: what a team heinzel's turn leaves in the team repository.

Four receipt-grade spine kinds become receipts: ``turn.finished``,
``draft.placed``, ``approval.observed`` and ``contract.amended``. A receipt
holds ids, fingerprints, the turn's cause, disposition and cost, versions,
the approver's roster handle and the fencing token the turn ran under:
never a body, a lesson, a summary, a report line, a name or an address.
Keys embed asset paths and slots, so only their SHA-256 travels
(``key_fp``), which still links a draft to its approval across homes.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from typing import Annotated, Any, Literal
from urllib.parse import quote

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from hz_kernel.errors import HzError
from hz_kernel.store.envelope import Event
from hz_kernel.terms import HANDLE as HANDLE
from hz_kernel.terms import Cause, Disposition

RECEIPT_VERSION = 1
HEINZEL_ID = r"^hz-[0-9A-HJKMNP-TV-Z]{26}$"
_TURN_ID = r"^[0-9A-Za-z_-]{1,64}$"
_SHA256 = r"^[0-9a-f]{64}$"
#: The largest fencing token, JSON's largest exact integer: a lease or receipt with a larger
#: one is not hz's (and would not survive a round trip through every JSON reader).
MAX_TOKEN = 2**53 - 1

Fingerprint = Annotated[str, Field(pattern=_SHA256)]
#: A source's fingerprint: a hash today, kept looser since each source kind makes its own.
InputFingerprint = Annotated[str, Field(pattern=r"^[0-9A-Za-z:._-]{1,128}$")]


class Receipt(BaseModel):
    """What every receipt has: whose, which turn, under which fencing token, when."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")
    v: Literal[1] = RECEIPT_VERSION
    kind: str
    heinzel: str = Field(pattern=HEINZEL_ID)
    turn: str | None = Field(default=None, pattern=_TURN_ID)
    token: int = Field(ge=0, le=MAX_TOKEN)
    at: str = Field(pattern=r"^\d{4}-\d\d-\d\dT[\d:.]+Z$")
    by: str | None = Field(default=None, pattern=HANDLE)
    """The roster handle of the home that ran it (receipts an older hz wrote have none)."""

    @property
    def path(self) -> str:
        """Where the receipt lives on ``hz/state``: one file per receipt, never two writers."""
        return f"receipts/{self.heinzel}/{self._stem()}.{self.kind}.json"

    def _stem(self) -> str:
        return str(self.turn)

    def to_bytes(self) -> bytes:
        """The file's bytes: sorted keys, so the same receipt is the same blob everywhere (and
        one an older hz wrote, without ``by``, the bytes it wrote)."""
        exclude = {"by"} if self.by is None else None
        return orjson.dumps(
            self.model_dump(mode="json", exclude=exclude), option=orjson.OPT_SORT_KEYS
        )


class TurnFinishedReceipt(Receipt):
    kind: Literal["turn.finished"] = "turn.finished"
    cause: Cause | None = None
    causes: list[Cause] = []
    disposition: Disposition
    usd: float = Field(ge=0)
    tokens: int = Field(ge=0)
    contract_version: int | None = None
    contract_fp: Fingerprint | None = None
    input_fps: list[InputFingerprint] = []
    draft_hash: Fingerprint | None = None


class DraftPlacedReceipt(Receipt):
    kind: Literal["draft.placed"] = "draft.placed"
    key_fp: Fingerprint
    asset: str = Field(max_length=512)
    """The asset ref, percent-encoded (``doc:reports/weekly.md#checkout`` stays as it is)."""
    hash: Fingerprint


class ApprovalObservedReceipt(Receipt):
    kind: Literal["approval.observed"] = "approval.observed"
    key_fp: Fingerprint
    approver: str = Field(pattern=HANDLE)
    share_changed: float = Field(ge=0, le=1)
    output_fp: Fingerprint


class ContractAmendedReceipt(Receipt):
    kind: Literal["contract.amended"] = "contract.amended"
    version: int = Field(ge=1)
    fingerprint: Fingerprint

    def _stem(self) -> str:
        """Outside a turn, each home that makes the amendment has a file of its own (an older
        hz, without ``by``, wrote ``v<version>``)."""
        if self.turn:
            return self.turn
        return f"v{self.version}" if self.by is None else f"v{self.version}-by-{self.by}"


AnyReceipt = Annotated[
    TurnFinishedReceipt | DraftPlacedReceipt | ApprovalObservedReceipt | ContractAmendedReceipt,
    Field(discriminator="kind"),
]


@functools.cache
def _adapter() -> TypeAdapter[AnyReceipt]:
    return TypeAdapter(AnyReceipt)


def parse_receipt(raw: bytes) -> AnyReceipt:
    """A receipt from its file's bytes (raises ``ValidationError`` for anything else)."""
    return _adapter().validate_json(raw)


_KINDS: dict[str, type[Receipt]] = {
    model.model_fields["kind"].default: model
    for model in (
        TurnFinishedReceipt,
        DraftPlacedReceipt,
        ApprovalObservedReceipt,
        ContractAmendedReceipt,
    )
}


def read_back(raw: bytes) -> AnyReceipt:
    """A receipt another home's hz wrote, read the way an older hz must read a newer one's:
    fields this hz does not know are left out instead of failing the whole receipt (``by``
    was once such a field). A change an older hz must not misread raises ``v``. The caller
    lints the whole document first, unknown fields included. Raises ``ValueError`` (invalid
    JSON or ``ValidationError``) for anything that is not a receipt."""
    data = orjson.loads(raw)
    if isinstance(data, dict):
        model = _KINDS.get(data.get("kind"))  # type: ignore[arg-type]
        if model is not None:
            data = {key: value for key, value in data.items() if key in model.model_fields}
    return _adapter().validate_python(data)


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def asset_ref(asset: str) -> str:
    """An asset ref with every character but letters, digits and ``_.-~:/#`` percent-encoded."""
    return quote(asset, safe=":/#")


def receipts_from(
    events: Iterable[Event], *, heinzel: str, handle: str, token: int
) -> list[AnyReceipt]:
    """The receipts of the receipt-grade events among ``events`` (a spine, or its tail).

    ``handle`` is this home's roster handle: every receipt's ``by``, and the
    spine's ``approver="owner"`` is the person at this home. A turn's receipts
    carry the fencing token its ``turn.started`` recorded; ``token`` is for
    the rest (an approval seen by the tick, an amendment outside a turn) and
    for turns that recorded none.
    A turn's contract fingerprint is found among ``events`` (pass the whole
    spine to have it); input fingerprints come from the
    gather step's checkpoint and the draft's hash from its ``draft.placed``.
    An event that cannot make a valid receipt is refused (HZS107), naming its seq.
    """
    seen = _Seen()
    receipts: list[AnyReceipt] = []
    for event in events:
        try:
            receipt = seen.receipt(event, heinzel=heinzel, handle=handle, token=token)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            raise HzError(
                "HZS107",
                f"{event.kind} cannot be a receipt: {field}: {first['msg']}",
                f"{heinzel} seq {event.seq}",
            ) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise HzError(
                "HZS107",
                f"{event.kind} cannot be a receipt: {type(exc).__name__} {exc}",
                f"{heinzel} seq {event.seq}",
            ) from None
        if receipt is not None:
            receipts.append(receipt)
    return receipts


class _Seen:
    """What earlier events of the same turn (or contract) tell a later receipt."""

    def __init__(self) -> None:
        self.contract_fps: dict[int, str] = {}
        self.starts: dict[str, dict[str, Any]] = {}
        self.inputs: dict[str, list[str]] = {}
        self.drafts: dict[str, str] = {}

    def receipt(self, event: Event, *, heinzel: str, handle: str, token: int) -> AnyReceipt | None:
        kind, data, turn = event.current_kind, event.data, event.turn
        if kind in ("contract.proposed", "contract.approved", "contract.amended"):
            self.contract_fps[int(data["version"])] = str(data["fingerprint"])
        if kind == "turn.started" and turn:
            self.starts[turn] = data
        begun = self.starts.get(turn or "", {})
        common: dict[str, Any] = {
            "heinzel": heinzel,
            "turn": turn,
            "token": begun.get("token", token),
            "at": event.ts,
            "by": handle,
        }
        if kind == "step.done" and turn and data.get("step") == "gather":
            self.inputs[turn] = [str(i["fingerprint"]) for i in data.get("inputs") or []]
        elif kind == "draft.placed":
            if turn:
                self.drafts[turn] = str(data["hash"])
            return DraftPlacedReceipt(
                **common,
                key_fp=fingerprint(str(data["key"])),
                asset=asset_ref(str(data["asset"])),
                hash=str(data["hash"]),
            )
        elif kind == "approval.observed":
            approver = str(data.get("approver") or "owner")
            return ApprovalObservedReceipt(
                **common,
                key_fp=fingerprint(str(data["key"])),
                approver=handle if approver == "owner" else approver,
                share_changed=float(data["share_changed"]),
                output_fp=str(data["output_fp"]),
            )
        elif kind == "contract.amended":
            return ContractAmendedReceipt(
                **common, version=int(data["version"]), fingerprint=str(data["fingerprint"])
            )
        elif kind == "turn.finished" and turn:
            return self._finished(data, common, turn)
        return None

    def _finished(self, data: dict[str, Any], common: dict[str, Any], turn: str) -> AnyReceipt:
        begun = self.starts.get(turn, {})
        version = begun.get("contract_version")
        causes = list(data.get("causes") or begun.get("causes") or [])
        return TurnFinishedReceipt(
            **common,
            cause=begun.get("cause") or (causes[0] if causes else None),
            causes=causes,
            disposition=data["disposition"],
            usd=float(data.get("usd") or 0.0),
            tokens=int(data.get("tokens") or 0),
            contract_version=version,
            contract_fp=None if version is None else self.contract_fps.get(int(version)),
            input_fps=self.inputs.get(turn, []),
            draft_hash=self.drafts.get(turn),
        )
