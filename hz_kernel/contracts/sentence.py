"""Templates shipped with hz, and the offline path from one sentence to a contract.

``hz heinzel new "every Friday at three, draft ..."`` must work on a fresh
machine with no model configured, so this module is deterministic: it picks
a template by keywords, reads the schedule from common phrases and puts the
sentence in the Goal. The result is ordinary contract text that compiles and
that the user reviews before approving version 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import yaml

from hz_kernel.contracts.compile import compile_contract
from hz_kernel.contracts.model import ContractError, FrozenModel
from hz_kernel.errors import UsageError

_TEMPLATE_NAME = re.compile(r"[a-z][a-z0-9-]{0,62}")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_OPTIONAL_LINE = re.compile(r"[ \t]*[A-Za-z_][\w-]*:[ \t]*\"\{([a-z_]+)\}\"[ \t]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_PARAM_CHARS = 1000


class TemplateParam(FrozenModel):
    """A placeholder: its default, what it means, and whether it may be left empty."""

    name: str
    default: str
    help: str
    optional: bool = False


class TemplateInfo(FrozenModel):
    """A shipped template: its name, a one-line description and the parameters it takes."""

    name: str
    description: str
    parameters: tuple[TemplateParam, ...]

    def defaults(self) -> dict[str, str]:
        return {param.name: param.default for param in self.parameters}


@dataclass(frozen=True)
class _Template:
    info: TemplateInfo
    text: str


def _template_files() -> list[str]:
    folder = resources.files("hz_kernel.contracts").joinpath("templates")
    return sorted(
        entry.name.removesuffix(".prose.md")
        for entry in folder.iterdir()
        if entry.name.endswith(".prose.md")
    )


def _load(name: str) -> _Template:
    if not _TEMPLATE_NAME.fullmatch(name) or name not in _template_files():
        known = ", ".join(_template_files())
        raise ContractError("HZC090", f"there is no template {name!r}; known: {known}", "template")
    raw = (
        resources.files("hz_kernel.contracts")
        .joinpath("templates", f"{name}.prose.md")
        .read_text(encoding="utf-8")
    )
    header, _, text = raw.partition("-->\n")
    meta = yaml.safe_load(header.removeprefix("<!--"))
    info = TemplateInfo(
        name=name,
        description=meta["description"],
        parameters=tuple(
            TemplateParam(
                name=key,
                default=str(spec["default"]),
                help=spec["help"],
                optional=bool(spec.get("optional", False)),
            )
            for key, spec in meta["params"].items()
        ),
    )
    return _Template(info=info, text=text)


def list_templates() -> list[TemplateInfo]:
    """Every shipped template, by name."""
    return [_load(name).info for name in _template_files()]


def render_template(name: str, params: dict[str, str]) -> str:
    """Fill a template's placeholders (defaults for those not given) and check that it compiles.

    Values are escaped for the YAML frontmatter, so a value can never add a
    key; a frontmatter line whose only value is an empty parameter is left out.
    """
    template = _load(name)
    defaults = template.info.defaults()
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ContractError(
            "HZC091",
            f"the template {name} has no parameter {unknown[0]!r}; it takes {', '.join(defaults)}",
            f"template:{name}",
        )
    values = {**defaults, **params}
    optional = {param.name for param in template.info.parameters if param.optional}
    for key, value in values.items():
        _check_value(name, key, value, may_be_empty=key in optional)
    front, _, body = template.text.partition("\n---\n")
    front_lines = [
        line
        for line in front.split("\n")
        if not ((m := _OPTIONAL_LINE.fullmatch(line)) and values[m.group(1)] == "")
    ]
    text = (
        _PLACEHOLDER.sub(lambda m: _yaml_escape(values[m.group(1)]), "\n".join(front_lines))
        + "\n---\n"
        + _PLACEHOLDER.sub(lambda m: _markdown_value(values[m.group(1)]), body)
    )
    compile_contract(text, source=f"template:{name}")
    return text


def _check_value(template: str, key: str, value: object, *, may_be_empty: bool) -> None:
    problem = None
    if not isinstance(value, str):
        problem = "must be text"
    elif not value.strip() and not may_be_empty:
        problem = "may not be empty"
    elif _CONTROL.search(value):
        problem = "must be one line without control characters"
    elif _SURROGATE.search(value):
        problem = "is not valid Unicode text (it holds half of a surrogate pair)"
    elif len(value) > MAX_PARAM_CHARS:
        problem = f"is longer than {MAX_PARAM_CHARS} characters"
    if problem:
        raise ContractError("HZC091", f"the parameter {key!r} {problem}", f"template:{template}")


def _yaml_escape(value: str) -> str:
    """The inside of a YAML double-quoted string: printable ASCII as it is, every other
    character as YAML's own escape (JSON's escapes would write a character beyond the BMP,
    an emoji, as a surrogate pair, which YAML reads as two lone halves)."""
    return "".join(_yaml_char(char) for char in value)


def _yaml_char(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    if " " <= char <= "~":
        return char
    if ord(char) <= 0xFFFF:
        return f"\\u{ord(char):04x}"
    return f"\\U{ord(char):08x}"


def _markdown_value(value: str) -> str:
    """A value on one line that cannot start a heading or open a comment in the body."""
    flat = " ".join(value.split())
    flat = flat.replace("<!--", "&lt;!--")
    return "\\" + flat if flat.startswith("#") else flat


# --- one sentence to a contract -------------------------------------------------------------

_KEYWORDS: dict[str, tuple[tuple[str, int], ...]] = {
    "weekly-report": (
        (r"\breports?\b", 3),
        (r"\bpull requests?\b|\bprs?\b", 2),
        (r"\bmerged\b", 1),
        (r"\bweekly\b|\bthis week", 1),
        (r"\bstatus\b", 1),
    ),
    "changelog": (
        (r"\bchange ?logs?\b", 4),
        (r"\brelease notes?\b", 3),
        (r"\bcommits?\b", 2),
        (r"\bgit history\b|\bhistory\b", 1),
    ),
    "digest": (
        (r"\bdigests?\b", 4),
        (r"\bsummar(?:y|ies|ise|ize)\b", 2),
        (r"\bnotes?\b", 1),
        (r"\bmarkdown\b|\bfolder\b|\bfiles\b", 1),
    ),
}

_DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
_DAY_CODES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
_NUMBERS = {word: number for number, word in enumerate(_NUMBER_WORDS)}
_NUMBER = r"(\d{1,2}|" + "|".join(_NUMBERS) + r")"
_SOURCE_DRIVEN = re.compile(
    r"\b(whenever|as soon as|every time|each time|on (?:each|every) (?:new )?(?:commit|push|change)"
    r"|when(?:ever)? (?:\w+ ){0,4}(?:changes?|moves?|lands?|is (?:pushed|merged|added))"
    r"|on change)\b"
)


def choose_template(sentence: str) -> str:
    """The template whose keywords the sentence matches best.

    A sentence that names nothing hz can make is refused (``HZU100``, listing
    the templates): guessing a digest would propose a contract the user never asked for.
    """
    text = sentence.lower()
    scores = {
        name: sum(weight for pattern, weight in keywords if re.search(pattern, text))
        for name, keywords in _KEYWORDS.items()
    }
    best = max(scores, key=lambda name: scores[name])
    if scores[best] == 0:
        makes = "; ".join(f"{t.name} ({t.description.rstrip('.')})" for t in list_templates())
        raise UsageError(
            "HZU100",
            f"hz cannot tell what to make from this sentence; it can make: {makes}. "
            "Say which in the sentence, or start from its template (--template NAME)",
            "sentence",
        )
    return best


@dataclass(frozen=True)
class ScheduleGuess:
    """What a sentence says about timing: a cron, "on change" (no schedule), or nothing."""

    cron: str | None
    source_driven: bool

    @property
    def found(self) -> bool:
        return self.cron is not None or self.source_driven


def schedule_from_sentence(sentence: str, default: str | None = None) -> ScheduleGuess:
    """Read a cron schedule from phrases like "every Friday at three" or "daily at 9".

    ``default`` is the template's own schedule; a bare "weekly" keeps its day
    and time when it has them. Hours 1 to 6 without am/pm are afternoon, since
    people schedule work in working hours.
    """
    text = " ".join(sentence.lower().replace("p.m.", "pm").replace("a.m.", "am").split())
    frequent = _frequent(text)
    days = _day_field(text)
    clock = _time_of_day(text)
    month_day = _month_day(text)
    if frequent is not None:
        minute, hour = frequent
        return ScheduleGuess(f"{minute} {hour} {month_day or '*'} * {days or '*'}", False)
    weekly = re.search(r"\b(weekly|every week|each week|once a week|per week)\b", text)
    if days is None and weekly and month_day is None:
        if default and _is_weekly(default) and clock is None:
            return ScheduleGuess(default, False)
        days = default.split()[4] if default and _is_weekly(default) else "MON"
    if days is None and clock is None and month_day is None:
        return ScheduleGuess(None, bool(_SOURCE_DRIVEN.search(text)))
    hour, minute = clock or (9, 0)
    return ScheduleGuess(f"{minute} {hour} {month_day or '*'} * {days or '*'}", False)


def _is_weekly(cron: str) -> bool:
    minute, hour, day_of_month, _, day_of_week = cron.split()
    return minute.isdigit() and hour.isdigit() and day_of_month == "*" and day_of_week != "*"


def _frequent(text: str) -> tuple[str, str] | None:
    """Minute and hour fields for "every 15 minutes", "every 2 hours", "hourly".

    A step cron cannot express (every 45 hours) is ignored rather than guessed.
    """
    if re.search(r"\bevery minute\b", text):
        return "*", "*"
    if re.search(r"\bevery half(?: an)? hour\b|\bhalf-hourly\b", text):
        return "*/30", "*"
    minutes = re.search(rf"\bevery {_NUMBER} ?(?:minutes?|mins?)\b", text)
    if minutes:
        step = _number(minutes.group(1))
        if 1 <= step < 60:
            return (f"*/{step}" if step > 1 else "*"), "*"
        return None
    hours = re.search(rf"\bevery {_NUMBER} ?hours?\b", text)
    if hours:
        step = _number(hours.group(1))
        if 1 <= step < 24:
            return "0", (f"*/{step}" if step > 1 else "*")
        return None
    if re.search(r"\b(hourly|every hour|each hour)\b", text):
        return "0", "*"
    return None


def _day_field(text: str) -> str | None:
    """The day-of-week field: named days, weekdays, weekends, or ``*`` for daily phrases."""
    if re.search(
        r"\b(weekdays?|workdays?|working days?|business days?|monday (?:to|through|-) friday)\b",
        text,
    ):
        return "MON-FRI"
    if re.search(r"\bweekends?\b", text):
        return "SAT,SUN"
    named = [
        (match.start(), index)
        for index, day in enumerate(_DAYS)
        for match in re.finditer(rf"\b{day}s?\b", text)
    ]
    if named:
        ordered = sorted({index for _, index in named})
        return ",".join(_DAY_CODES[index] for index in ordered)
    if re.search(
        r"\b(daily|every day|each day|every morning|every evening|every night|nightly|"
        r"each morning|each evening)\b",
        text,
    ):
        return "*"
    return None


def _month_day(text: str) -> str | None:
    if re.search(
        r"\b(monthly|every month|each month|once a month|first of (?:the|each) month)\b", text
    ):
        nth = re.search(r"\bon the (\d{1,2})(?:st|nd|rd|th)\b", text)
        return nth.group(1) if nth and 1 <= int(nth.group(1)) <= 28 else "1"
    nth = re.search(r"\bon the (\d{1,2})(?:st|nd|rd|th)\b", text)
    if nth and 1 <= int(nth.group(1)) <= 31:
        return nth.group(1)
    return None


def _time_of_day(text: str) -> tuple[int, int] | None:
    """Hour and minute from "at 8:30", "at 3pm", "at three", "at half past two", "noon"."""
    if re.search(r"\b(noon|midday)\b", text):
        return 12, 0
    if re.search(r"\bmidnight\b", text):
        return 0, 0
    candidates: list[tuple[int | None, int]] = []
    half = re.search(rf"\bat (half|quarter) past {_NUMBER}\b", text)
    if half:
        candidates.append(
            (_hour(_number(half.group(2)), None), 30 if half.group(1) == "half" else 15)
        )
    clock = re.search(r"\b(?:at|@) ?(\d{1,2})[:.h](\d{2}) ?(am|pm)?\b", text) or re.search(
        r"\b(\d{1,2}):(\d{2}) ?(am|pm)?\b", text
    )
    if clock:
        candidates.append((_hour(int(clock.group(1)), clock.group(3)), int(clock.group(2))))
    suffixed = re.search(r"\b(?:at |@ ?)?(\d{1,2}) ?(am|pm)\b", text)
    if suffixed:
        candidates.append((_hour(int(suffixed.group(1)), suffixed.group(2)), 0))
    spoken = re.search(
        rf"\bat {_NUMBER}(?: (thirty|fifteen|forty-five|o'?clock))?(?: ?(am|pm))?\b", text
    )
    if spoken:
        minute = {"thirty": 30, "fifteen": 15, "forty-five": 45}.get(spoken.group(2) or "", 0)
        candidates.append((_hour(_number(spoken.group(1)), spoken.group(3)), minute))
    for hour, minute in candidates:
        if hour is not None and 0 <= minute < 60:
            return hour, minute
    for pattern, hour_of_day in _PARTS_OF_DAY:
        if re.search(pattern, text):
            return hour_of_day, 0
    return None


_PARTS_OF_DAY = (
    (r"\b(in the|every|each) morning\b", 9),
    (r"\b(in the|every|each) afternoon\b", 15),
    (r"\b(in the|every|each) evening\b", 18),
    (r"\b(at|every|each) night\b|\btonight\b|\bnightly\b", 21),
)


def _number(token: str) -> int:
    return _NUMBERS[token] if token in _NUMBERS else int(token)


def _hour(value: int, meridiem: str | None) -> int | None:
    """A 24-hour clock hour, or None for something that is not one (like "at 25")."""
    if meridiem is not None:
        if not 1 <= value <= 12:
            return None
        return value % 12 + (12 if meridiem == "pm" else 0)
    if value > 23:
        return None
    return value + 12 if 1 <= value <= 6 else value


def contract_from_sentence(sentence: str, params: dict[str, str]) -> str:
    """Contract text from one sentence: template by keywords, schedule from its phrases.

    ``params`` fill the chosen template's placeholders and win over what the
    sentence implies; parameters that template does not take are ignored.
    """
    goal = " ".join(sentence.split())
    if not goal:
        raise ContractError(
            "HZC092", "say in a sentence what the heinzel should keep true", "sentence"
        )
    if len(goal) > MAX_PARAM_CHARS:
        raise ContractError(
            "HZC092", f"the sentence is longer than {MAX_PARAM_CHARS} characters", "sentence"
        )
    name = choose_template(goal)
    defaults = _load(name).info.defaults()
    implied: dict[str, str] = {"goal": goal}
    default_schedule = defaults.get("schedule") or None
    guess = schedule_from_sentence(goal, default_schedule)
    if "schedule" in defaults and guess.found:
        implied["schedule"] = guess.cron or ""
    chosen = {key: value for key, value in params.items() if key in defaults}
    return render_template(name, {**implied, **chosen})
