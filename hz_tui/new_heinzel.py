"""Creating a heinzel from the cockpit (Ctrl+N on the home screen, *New heinzel* in the palette).

The user picks a template (then gives its parameters, one dialog each) or
describes the job in a sentence (then may name it: two heinzels from one
template would otherwise both take the template's name). The kernel
(``heinzel.new``) creates the heinzel ``proposed`` and its page opens on the
contract, which only an approval (``a``) turns into version 1. Escape in any
dialog ends the flow with nothing created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ValidationError

from hz_kernel import operations as ops
from hz_kernel.errors import HzError
from hz_tui.screens.choose import ChooseScreen
from hz_tui.screens.prompt import PromptScreen

if TYPE_CHECKING:
    from hz_kernel.api import TemplateParameter, TemplateSummary
    from hz_tui.app import CockpitApp

#: The chooser's id for "describe it in a sentence" (no template name starts with ``*``).
SENTENCE = "*sentence"
#: Typed for an optional parameter, it is given empty (Enter alone keeps the default).
EMPTY = "-"
SENTENCE_EXAMPLE = "every Friday at three, draft the weekly report from merged pull requests"


def start(app: CockpitApp) -> None:
    """Run the flow in a worker: its dialogs are awaited one after another."""
    app.run_worker(create(app), name="new heinzel", group="new-heinzel")


async def create(app: CockpitApp) -> None:
    """Ask, send ``heinzel.new``, open the new heinzel's page; a refusal is one coded toast."""
    try:
        templates = await app.client.call(ops.TEMPLATES, ops.Empty())
        request = await ask(app, templates.items)
        if request is None:
            return
        made = await app.client.call(ops.NEW, request)
    except HzError as exc:
        app.notify(exc.one_line(), severity="error", timeout=10)
        return
    app.notify(f"{made.name}: proposed — read the contract, a approves, x declines")
    app.open_heinzel(made.id)


async def ask(app: CockpitApp, templates: list[TemplateSummary]) -> ops.NewRequest | None:
    """The request the user's answers make, or None once they press Escape."""
    items = [(t.name, f"{t.name} — {t.description}") for t in templates]
    items.append((SENTENCE, "Describe it in a sentence…"))
    choice = await app.push_screen_wait(ChooseScreen("New heinzel from…", items))
    if choice is None:
        return None
    if choice == SENTENCE:
        sentence = await app.push_screen_wait(
            PromptScreen(
                "New heinzel from a sentence",
                "What it keeps true and when; hz picks a template and reads the schedule.",
                placeholder=SENTENCE_EXAMPLE,
            )
        )
        if sentence is None:
            return None
        name = await app.push_screen_wait(
            PromptScreen(
                "New heinzel from a sentence: its name",
                "Enter with nothing typed keeps the name of the template hz picks.",
                placeholder="name",
                allow_empty=True,
            )
        )
        if name is None:
            return None
        return new_request(sentence=sentence, params={"name": name} if name else {})
    from hz_kernel.api import TemplateParameter

    template = next(t for t in templates if t.name == choice)
    params: dict[str, str] = {}
    details = template.details or [
        TemplateParameter(name=name, default="", help="") for name in template.parameters
    ]
    for number, parameter in enumerate(details, start=1):
        value = await app.push_screen_wait(
            PromptScreen(
                f"New {template.name}: {parameter.name} ({number} of {len(details)})",
                _about(parameter),
                placeholder=parameter.default or parameter.name,
                allow_empty=True,
            )
        )
        if value is None:
            return None
        if value == EMPTY and parameter.optional:
            params[parameter.name] = ""
        elif value:
            params[parameter.name] = value
    return new_request(template=template.name, params=params)


def _about(parameter: TemplateParameter) -> str:
    """The prompt's line: what the parameter is for, and what Enter alone keeps."""
    about = f"{parameter.help[:1].upper()}{parameter.help[1:]}." if parameter.help else ""
    keeps = f"Enter keeps {parameter.default!r}" if parameter.default else "Enter keeps the default"
    empty = f"; {EMPTY} leaves it empty" if parameter.optional else ""
    return f"{about} {keeps}{empty}.".strip()


def new_request(**fields: object) -> ops.NewRequest:
    """The request, refused as the daemon refuses a body that does not fit (``HZD010``)."""
    try:
        return ops.NewRequest.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(part) for part in first["loc"]) or None
        raise HzError("HZD010", first["msg"], place) from None
