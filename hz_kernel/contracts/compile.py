"""Compile a contract's text into a ``CompiledContract`` or one ``ContractError`` with a line.

The compiler is the gate between what a person (or a heinzel) wrote and
what the kernel obeys, so it is strict: unknown keys, wrong types, unknown
sources and capabilities an input would need but the contract does not
grant are all refused, each with a stable ``HZC`` code and the file line.
When a text has several problems the one nearest the top is reported.
"""

from __future__ import annotations

import hashlib
import json
import types
import typing
from difflib import get_close_matches
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from hz_kernel.contracts.cron import cron_shape
from hz_kernel.contracts.model import (
    CAPABILITY_IMPLIES,
    FORMAT_VERSION,
    NAME_PATTERN,
    PUBLISH_CAPABILITIES,
    SOURCE_CAPABILITY,
    SOURCES,
    TEAM_HINT,
    ArgsModel,
    CompiledContract,
    ContractBody,
    ContractError,
    HzTable,
    normalise_asset,
    shown,
)
from hz_kernel.contracts.parse import (
    KeyPath,
    Located,
    at,
    check_text,
    load_frontmatter,
    parse_body,
    split_frontmatter,
    strip_comments,
)

TOP_LEVEL_KEYS = ("name", "namespace", "description", "hz")
MAX_DESCRIPTION_CHARS = 1000

_TYPE_NOUNS = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "dict_type": "a table of key: value lines",
    "model_type": "a table of key: value lines",
    "model_attributes_type": "a table of key: value lines",
    "tuple_type": "a list",
    "list_type": "a list",
}
_LITERAL_CODES = {"source": "HZC030", "capability": "HZC041", "render_on_schedule": "HZC015"}


def compile_contract(text: str, *, source: str) -> CompiledContract:
    """Compile ``text``; ``source`` (a path or a label) prefixes the place of any error."""
    if not isinstance(text, str):
        raise ContractError("HZC004", "the contract must be given as text", at(source, 1))
    normalised = check_text(text, source)
    split = split_frontmatter(normalised, source)
    located = load_frontmatter(split, source)
    front = located.value
    if not isinstance(front, dict):
        raise ContractError(
            "HZC006",
            "the frontmatter must be a table of key: value lines (name, hz, ...)",
            at(source, split.yaml_first_line),
        )
    name, namespace, description = _header(front, located, source)
    hz = _hz_table(front, located, source)
    _cross_checks(name, hz, located, source)
    if hz.team is not None and namespace != "team":
        raise ContractError(
            "HZC102",
            "hz.team belongs to a heinzel in the team namespace: add namespace: team",
            at(source, located.line(("hz", "team"), prefer_key=True)),
        )
    _check_hints(hz, namespace, located, source)
    parsed = parse_body(split.body, split.body_first_line, source)
    goal = parsed.body.section("Goal")
    if goal is None:
        raise ContractError(
            "HZC045",
            "the body needs a '### Goal' section saying what this heinzel keeps true",
            at(source, min(split.body_first_line, split.last_line)),
        )
    if not _collapse(goal):
        raise ContractError(
            "HZC045", "the '### Goal' section is empty", at(source, parsed.heading_lines["goal"])
        )
    return CompiledContract(
        name=name,
        namespace=namespace,
        description=description,
        hz=hz,
        body=parsed.body,
        fingerprint=intent_fingerprint(hz, parsed.body),
    )


def intent_fingerprint(hz: HzTable, body: ContractBody) -> str:
    """SHA-256 of the material parts: the normalised hz table and the body's words.

    Whitespace, HTML comments, key order, section order, empty sections and
    the spelling of a schedule (``FRI`` or ``5``, a range or its list) do not
    count; a changed value, input, capability, slot or word does.
    """
    sections = sorted(
        [section.title.casefold(), _collapse(section.text)]
        for section in body.sections
        if _collapse(section.text)
    )
    table = hz.model_dump(mode="json")
    for later in ("team", "discover"):  # keys added later: contracts without them keep
        if not table[later]:  # their fingerprint
            del table[later]
    if hz.schedule is not None:
        table["schedule"] = cron_shape(hz.schedule).canonical()
    material = {
        "format": FORMAT_VERSION,
        "hz": table,
        "preamble": _collapse(body.preamble),
        "sections": sections,
    }
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _collapse(text: str) -> str:
    return " ".join(strip_comments(text).split())


# --- the header: name, namespace, description -----------------------------------------------


def _header(front: dict[str, Any], located: Located, source: str) -> tuple[str, str, str | None]:
    for key in front:
        if key in TOP_LEVEL_KEYS:
            continue
        close = get_close_matches(key, TOP_LEVEL_KEYS, n=1, cutoff=0.75)
        if close:
            raise ContractError(
                "HZC011",
                f"unknown key {key!r} in the frontmatter (did you mean {close[0]}?)",
                at(source, located.line((key,), prefer_key=True)),
            )

    def place(key: str) -> str:
        return at(source, located.line((key,)))

    if "name" not in front:
        raise ContractError(
            "HZC061", "the frontmatter needs a name: (like name: weekly-report)", at(source, 1)
        )
    name = front["name"]
    if not isinstance(name, str):
        raise ContractError("HZC060", f"name must be text, not {_kind(name)}", place("name"))
    if not NAME_PATTERN.fullmatch(name):
        raise ContractError(
            "HZC060",
            f"{shown(name)} is not a usable name: use 2 to 63 lower-case letters, digits "
            "and hyphens, starting with a letter (like weekly-report)",
            place("name"),
        )
    namespace = front.get("namespace", "me")
    if namespace not in ("me", "team"):
        raise ContractError(
            "HZC062", f"namespace must be me or team, not {shown(namespace)}", place("namespace")
        )
    description = front.get("description")
    if description is not None and not isinstance(description, str):
        raise ContractError(
            "HZC012", f"description must be text, not {_kind(description)}", place("description")
        )
    if description is not None and len(description) > MAX_DESCRIPTION_CHARS:
        raise ContractError(
            "HZC012",
            f"description is longer than {MAX_DESCRIPTION_CHARS} characters",
            place("description"),
        )
    return name, namespace, description


# --- the hz table ---------------------------------------------------------------------------


def _hz_table(front: dict[str, Any], located: Located, source: str) -> HzTable:
    raw = front.get("hz")
    if raw is None:
        where = located.line(("hz",), prefer_key=True) if "hz" in front else 1
        raise ContractError(
            "HZC010",
            "the frontmatter needs an hz: table (schedule, inputs, requires, publishes, ...)",
            at(source, where),
        )
    if not isinstance(raw, dict):
        raise ContractError(
            "HZC012",
            f"hz must be a table of key: value lines, not {_kind(raw)}",
            at(source, located.line(("hz",))),
        )
    problems: list[tuple[int, int, ContractError]] = []
    prepared = dict(raw)
    inputs = raw.get("inputs")
    if isinstance(inputs, dict):
        prepared["inputs"] = {
            name: _prepare_input(name, spec, located, source, problems)
            for name, spec in inputs.items()
        }
    table: HzTable | None = None
    try:
        table = HzTable.model_validate(prepared)
    except ValidationError as exc:
        problems.extend(
            (error_line, 1, error)
            for error_line, error in (
                _translate(detail, ("hz",), HzTable, located, source) for detail in exc.errors()
            )
        )
    if problems:
        raise min(problems, key=lambda problem: problem[:2])[2]
    assert table is not None
    return table


def _prepare_input(
    name: str,
    spec: Any,
    located: Located,
    source: str,
    problems: list[tuple[int, int, ContractError]],
) -> Any:
    """Check an input's source, method and args; return it with its args normalised."""
    if not isinstance(spec, dict):
        return spec
    path: KeyPath = ("hz", "inputs", name)
    source_name, method = spec.get("source"), spec.get("method")
    if not isinstance(source_name, str) or not isinstance(method, str):
        return spec
    if source_name not in SOURCES:
        close = get_close_matches(source_name, SOURCES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        line = located.line((*path, "source"))
        message = f"unknown source {shown(source_name)}{hint}; known: {', '.join(SOURCES)}"
        problems.append((line, 0, ContractError("HZC030", message, at(source, line))))
        return spec
    methods = SOURCES[source_name]
    if method not in methods:
        line = located.line((*path, "method"))
        message = (
            f"the source {source_name} has no method {shown(method)}; use {' or '.join(methods)}"
        )
        problems.append((line, 0, ContractError("HZC031", message, at(source, line))))
        return spec
    args = spec.get("args", {})
    if not isinstance(args, dict):
        return spec
    model = methods[method]
    try:
        normalised = model.model_validate(args)
    except ValidationError as exc:
        for detail in exc.errors():
            line, error = _translate(detail, (*path, "args"), model, located, source)
            problems.append((line, 0, error))
        return spec
    return {**spec, "args": normalised.model_dump(exclude_none=True)}


def _cross_checks(name: str, hz: HzTable, located: Located, source: str) -> None:
    granted = set(hz.requires)
    for capability in hz.requires:
        granted |= CAPABILITY_IMPLIES.get(capability, frozenset())
    for input_name, spec in hz.inputs.items():
        needed = SOURCE_CAPABILITY[spec.source]
        if needed not in granted:
            raise ContractError(
                "HZC034",
                f"the input {input_name!r} reads from {spec.source}, which needs {needed} "
                "in hz.requires",
                at(source, located.line(("hz", "inputs", input_name, "source"))),
            )
        if spec.source == "heinzel" and spec.args.get("heinzel") == name:
            raise ContractError(
                "HZC035",
                f"the input {input_name!r} reads this heinzel's own output; "
                "a heinzel may only read others",
                at(source, located.line(("hz", "inputs", input_name, "args", "heinzel"))),
            )
    raw_publishes = located.value["hz"].get("publishes") or []
    seen: dict[str, int] = {}
    for index, entry in enumerate(raw_publishes):
        line = located.line(("hz", "publishes", index))
        needed = PUBLISH_CAPABILITIES[entry["capability"]]
        if needed not in granted:
            raise ContractError(
                "HZC034",
                f"publishing with {entry['capability']} needs {needed} in hz.requires",
                at(source, line),
            )
        asset = normalise_asset(entry["asset"])
        if asset in seen:
            raise ContractError(
                "HZC042",
                f"the asset {asset} is published twice (also on line {seen[asset]})",
                at(source, line),
            )
        seen[asset] = line


def _check_hints(hz: HzTable, namespace: str, located: Located, source: str) -> None:
    """A ``team:`` hint needs a team heinzel and ``git:read``, a folder hint ``files:read``:
    what a hint finds is proposed as a ``git`` file or ``files`` input (the user grants that
    by writing the hint)."""
    for index, hint in enumerate(located.value["hz"].get("discover") or []):
        place = at(source, located.line(("hz", "discover", index)))
        team = str(hint).startswith(TEAM_HINT)
        if team and namespace != "team":
            raise ContractError(
                "HZC106",
                f"the discover hint {shown(hint)} reads the team repository's files: it "
                "belongs to a heinzel in the team namespace (add namespace: team)",
                place,
            )
        needed = "git:read" if team else "files:read"
        if needed not in hz.requires:
            raise ContractError(
                "HZC107",
                f"the discover hint {shown(hint)} finds files this heinzel would read: "
                f"add {needed} to hz.requires",
                place,
            )


# --- turning pydantic's errors into contract errors -----------------------------------------


def _translate(
    detail: ErrorDetails,
    prefix: KeyPath,
    root: type[BaseModel],
    located: Located,
    source: str,
) -> tuple[int, ContractError]:
    loc = tuple(detail["loc"])
    about_key = bool(loc) and loc[-1] == "[key]"
    relative = loc[:-1] if about_key else loc
    path = (*prefix, *relative)
    kind = detail["type"]
    where = _dotted(path)
    if kind.startswith("HZC"):
        code, message = kind, f"{where}: {detail['msg']}"
    elif kind == "extra_forbidden":
        parent = _dotted(path[:-1])
        known = _known_keys(root, relative[:-1])
        close = get_close_matches(str(path[-1]), known, n=1) if known else []
        hint = f" (did you mean {close[0]}?)" if close else ""
        listing = f"; known keys: {', '.join(known)}" if known and not close else ""
        code, message = "HZC011", f"unknown key {path[-1]!r} in {parent}{hint}{listing}"
        about_key = True
    elif kind == "missing":
        code, message = "HZC013", f"{_dotted(path[:-1])} needs the key {path[-1]!r}"
        about_key = True
    elif kind == "literal_error":
        code = _LITERAL_CODES.get(str(path[-1]), "HZC015")
        expected = (detail.get("ctx") or {}).get("expected", "")
        message = f"{where} must be {expected}, not {shown(detail['input'])}"
    elif kind in _TYPE_NOUNS:
        code = "HZC012"
        message = f"{where} must be {_TYPE_NOUNS[kind]}, not {_kind(detail['input'])}"
    else:
        code, message = "HZC012", f"{where}: {detail['msg'].lower()}"
    line = located.line(path, prefer_key=about_key)
    return line, ContractError(code, message, at(source, line))


def _dotted(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the frontmatter"


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, int | float):
        return f"the number {shown(value)}"
    if isinstance(value, str):
        return f"the text {shown(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def _known_keys(root: type[BaseModel], path: KeyPath) -> list[str]:
    """The keys the model at ``path`` (inside ``root``) accepts, for "did you mean" hints."""
    model: Any = root
    remaining = list(path)
    while remaining:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
        field = model.model_fields.get(str(remaining.pop(0)))
        if field is None:
            return []
        model = _unwrap(field.annotation)
        if _is_container(field.annotation) and remaining:
            remaining.pop(0)
    if isinstance(model, type) and issubclass(model, BaseModel) and model is not ArgsModel:
        return list(model.model_fields)
    return []


def _is_container(annotation: Any) -> bool:
    origin = typing.get_origin(_strip_annotated(annotation))
    return origin in (dict, tuple, list)


def _strip_annotated(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _unwrap(annotation: Any) -> Any:
    """The model class inside ``X``, ``X | None``, ``dict[str, X]`` or ``tuple[X, ...]``."""
    annotation = _strip_annotated(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _unwrap(members[0]) if len(members) == 1 else annotation
    if origin is dict:
        return _unwrap(typing.get_args(annotation)[1])
    if origin in (tuple, list):
        return _unwrap(typing.get_args(annotation)[0])
    return annotation
