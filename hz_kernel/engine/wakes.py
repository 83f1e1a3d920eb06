"""Wakes and their idempotency keys.

A wake is one reason to run a turn. Its key makes it idempotent: a key
whose turn finished or was skipped is never run again, and a key whose
turn started and did not end is resumed at its last checkpoint. Several
wakes due together become one turn that keeps every key.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from hz_kernel.vocabulary import Cause


class Wake(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    cause: Cause
    key: str
    request_id: str | None = None
    input: str | None = None
    fingerprint: str | None = None
    slot: str | None = None
    due_at: datetime | None = None


def schedule_key(heinzel_id: str, slot: str) -> str:
    return f"{heinzel_id}@{slot}"


def source_key(heinzel_id: str, input_name: str, fingerprint: str) -> str:
    return f"{heinzel_id}@{input_name}:{fingerprint}"


def request_key(heinzel_id: str, request_id: str) -> str:
    """``asked`` (and ``approval``) wakes: keyed by the request that caused them."""
    return f"{heinzel_id}@{request_id}"


def retry_key(heinzel_id: str, parent_turn: str, request_id: str) -> str:
    return f"{heinzel_id}@retry:{parent_turn}:{request_id}"


def created_key(heinzel_id: str) -> str:
    """The ``created`` wake: a heinzel's first turn, once, after its contract is approved."""
    return f"{heinzel_id}@created"


def stale_key(heinzel_id: str, output: str, valid_until: str) -> str:
    return f"{heinzel_id}@stale:{output}:{valid_until}"


def draft_key(heinzel_id: str, version: int, wake_key: str, asset: str) -> str:
    """The effect key of a placed draft: ``<id>@v<version>@<slot or request>@<asset>``."""
    occasion = wake_key.split("@", 1)[1] if "@" in wake_key else wake_key
    return f"{heinzel_id}@v{version}@{occasion}@{asset}"
