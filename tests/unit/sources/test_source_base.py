"""The request/result shapes, the registry's routing and fingerprint stability."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from sources_helpers import NOW

import hz_kernel
from hz_kernel.adapters.sources import (
    FetchResult,
    SourceAdapter,
    SourceRequest,
    default_registry,
    fetch,
)
from hz_kernel.errors import HzError

REPO_ROOT = Path(hz_kernel.__file__).resolve().parent.parent


def test_cache_key_ignores_arg_order_and_tracks_every_field() -> None:
    one = SourceRequest(source="files", method="glob", args={"pattern": "*.md", "root": "docs"})
    same = SourceRequest(source="files", method="glob", args={"root": "docs", "pattern": "*.md"})
    assert one.cache_key() == same.cache_key()
    assert len(one.cache_key()) == 64
    others = [
        SourceRequest(source="files", method="glob", args={"pattern": "*.md", "root": "doc"}),
        SourceRequest(source="files", method="glob", args={"pattern": "*.md"}),
        SourceRequest(source="document", method="glob", args=dict(one.args)),
        SourceRequest(source="files", method="other", args=dict(one.args)),
    ]
    assert len({one.cache_key(), *(other.cache_key() for other in others)}) == 5


def test_whole_map_fingerprint_is_the_hash_of_canonical_json() -> None:
    result = FetchResult(
        request=SourceRequest(source="shell", method="run", args={"command": "true"}),
        facets={"b": "2", "a": "1"},
        content={},
        cursor=None,
        as_of=NOW,
    )
    expected = hashlib.sha256(b'{"a":"1","b":"2"}').hexdigest()
    assert result.fingerprint() == expected
    assert result.fingerprint("a") == "1"
    with pytest.raises(HzError) as caught:
        result.fingerprint("missing")
    assert caught.value.code == "HZT012"


def test_as_of_is_kept_in_utc_and_a_naive_now_counts_as_utc(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    request = SourceRequest(source="files", method="glob", args={"pattern": "*.txt"})
    result = fetch(request, now=datetime(2026, 1, 2, 3, 4), base_dir=tmp_path)
    assert result.as_of == datetime(2026, 1, 2, 3, 4, tzinfo=NOW.tzinfo)
    assert result.as_of.utcoffset() is not None


@pytest.mark.parametrize(
    ("kind", "method"),
    [
        ("files", "glob"),
        ("git", "commits"),
        ("git", "merged_pull_requests"),
        ("shell", "run"),
        ("http", "get"),
        ("document", "section"),
        ("heinzel", "approved_output"),
    ],
)
def test_built_in_adapters_satisfy_the_protocol(kind: str, method: str) -> None:
    registry = default_registry()
    assert registry.kinds == {"files", "git", "shell", "http", "document", "heinzel"}
    adapter = registry.adapter_for(SourceRequest(source=kind, method=method, args={}))
    assert isinstance(adapter, SourceAdapter)
    assert adapter.kind == kind
    assert adapter.replay_safe is True


@pytest.mark.parametrize(
    ("source", "method", "args", "code"),
    [
        ("ftp", "get", {}, "HZT010"),
        ("git", "tags", {"repo": "."}, "HZT010"),
        ("files", "glob", {}, "HZT011"),
        ("files", "glob", {"pattern": "*", "rooot": "."}, "HZT011"),
        ("files", "glob", {"pattern": 7}, "HZT011"),
        ("shell", "run", {"command": ""}, "HZT011"),
        ("shell", "run", {"command": "true", "timeout": 0}, "HZT011"),
        ("git", "commits", {"repo": ".", "limit": 0}, "HZT011"),
        ("http", "get", {}, "HZT011"),
        ("document", "section", {"anchor": "x"}, "HZT011"),
        ("document", "section", {"path": "a.md", "anchor": ""}, "HZT011"),
        ("git", "commits", {"repo": ""}, "HZT011"),
        ("heinzel", "approved_output", {"heinzel": "top"}, "HZT011"),
        ("heinzel", "approved_output", {"heinzel": "top", "output": "top"}, "HZT113"),
    ],
)
def test_bad_requests_get_a_code_and_a_place(
    tmp_path: Path, source: str, method: str, args: dict[str, object], code: str
) -> None:
    request = SourceRequest.model_validate({"source": source, "method": method, "args": args})
    with pytest.raises(HzError) as caught:
        fetch(request, now=NOW, base_dir=tmp_path)
    assert caught.value.code == code
    assert caught.value.place == f"{source}:{method}"


def test_fingerprints_are_the_same_in_a_fresh_process(tmp_path: Path) -> None:
    """Hash seeds and dict order must not leak into fingerprints."""
    for name, text in {"b.md": "bee", "a.md": "ay", "sub/c.md": "sea"}.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    request = SourceRequest(source="files", method="glob", args={"pattern": "**/*.md"})
    here = fetch(request, now=NOW, base_dir=tmp_path)
    script = (
        "import sys, json; from datetime import datetime;"
        "from hz_kernel.adapters.sources import fetch, SourceRequest;"
        "r = fetch(SourceRequest.model_validate_json(sys.argv[1]),"
        " now=datetime.fromisoformat(sys.argv[2]));"
        "print(json.dumps([r.fingerprint(), r.facets]))"
    )
    outputs = set()
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", script, request.model_dump_json(), NOW.isoformat()],
            cwd=tmp_path,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO_ROOT)},
            capture_output=True,
            check=True,
            text=True,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    fingerprint, facets = json.loads(outputs.pop())
    assert fingerprint == here.fingerprint()
    assert facets == here.facets
    assert facets["a.md"] == hashlib.sha256(b"ay").hexdigest()
