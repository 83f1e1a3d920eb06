"""The shapes every source shares: a request, its fingerprinted result and the adapter protocol.

A contract input becomes a ``SourceRequest``; an adapter turns it into a
``FetchResult`` whose facets are content hashes. The tick compares those
hashes to decide whether an input moved, so they must depend on the content
alone: canonical JSON, sorted keys, SHA-256.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError, field_validator

from hz_kernel.errors import HzError

OUTPUT_CAP_BYTES = 1 << 20
"""The most bytes of one piece of fetched content a turn is shown (1 MiB)."""

ArgsModel = TypeVar("ArgsModel", bound=BaseModel)


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` the same way on every run and machine, so its hash is stable."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_hex(data: bytes | str) -> str:
    """The hex SHA-256 of bytes, or of text encoded as UTF-8."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def as_utc(moment: datetime) -> datetime:
    """Normalise to UTC; a naive time (for example a bare ``HZ_NOW``) is taken to be UTC."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def resolve_path(raw: str, base_dir: Path | None) -> Path:
    """Expand ``~`` and anchor a relative path at ``base_dir`` (the working directory if unset)."""
    path = Path(raw).expanduser()
    if path.is_absolute():
        return path
    return (base_dir if base_dir is not None else Path.cwd()) / path


def cap_text(
    data: bytes, limit: int = OUTPUT_CAP_BYTES, encoding: str = "utf-8"
) -> tuple[bytes, str]:
    """Keep at most ``limit`` bytes and decode them, noting a cut so a turn knows it saw part."""
    kept = data[:limit]
    try:
        text = kept.decode(encoding, errors="replace")
    except LookupError:
        text = kept.decode("utf-8", errors="replace")
    if len(data) > limit:
        text += f"\n[hz: output cut at {limit} bytes]\n"
    return kept, text


class SourceRequest(BaseModel):
    """What one contract input asks a source for; equal requests share one fetch per tick."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    source: str
    method: str
    args: dict[str, JsonValue]

    def cache_key(self) -> str:
        """A stable name for this request: the hash of its canonical JSON."""
        return sha256_hex(
            canonical_json({"source": self.source, "method": self.method, "args": self.args})
        )

    def describe(self) -> str:
        """A short label for error places and logs, e.g. ``git:commits``."""
        return f"{self.source}:{self.method}"

    def parse_args(self, model: type[ArgsModel]) -> ArgsModel:
        """Validate ``args`` against a method's model, turning mistakes into ``HZT011``."""
        try:
            return model.model_validate(self.args)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "args"
            raise HzError(
                "HZT011", f"bad argument {where}: {first['msg']}", self.describe()
            ) from None


class FetchResult(BaseModel):
    """A fetched input: per-facet fingerprints, the text a turn sees, a cursor and a time."""

    model_config = ConfigDict(defer_build=True)

    request: SourceRequest
    facets: dict[str, str]
    content: dict[str, str]
    cursor: str | None = None
    as_of: datetime
    not_modified: bool = False

    @field_validator("as_of")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return as_utc(value)

    def fingerprint(self, facet: str | None = None) -> str:
        """One facet's hash, or the hash of the whole facet map when no facet is named."""
        if facet is None:
            return sha256_hex(canonical_json(self.facets))
        try:
            return self.facets[facet]
        except KeyError:
            raise HzError(
                "HZT012", f"the input has no facet {facet!r}", self.request.describe()
            ) from None


@runtime_checkable
class SourceAdapter(Protocol):
    """One kind of source. Fetching is a read, so a rerun after a crash is harmless."""

    kind: str
    methods: frozenset[str]
    replay_safe: bool

    def fetch(
        self, request: SourceRequest, *, now: datetime, previous: FetchResult | None
    ) -> FetchResult: ...
