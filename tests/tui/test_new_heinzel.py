"""``n`` on the home screen: a heinzel from a template or a sentence, proposed for approval.

Driven with Pilot through the real dialogs against a real embedded kernel;
what was created is checked by asking that kernel (``heinzel.list``).
"""

from __future__ import annotations

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.choose import ChooseScreen
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.screens.home import HomeScreen
from hz_tui.screens.prompt import PromptScreen
from tests.tui.test_cockpit import SIZE, table_of, until

TEMPLATE_PARAMETERS = 8


def messages_of(app: CockpitApp) -> list[str]:
    return [n.message for n in app.notices.history]


async def names_and_states(client: LocalClient) -> dict[str, str]:
    listed = await client.call(ops.LIST, ops.ListRequest())
    return {item.name: item.state for item in listed.items}


async def choose(pilot, item: str) -> None:
    """Press ``n`` and pick ``item`` (a template's name, or the sentence) in the chooser."""
    app = pilot.app
    await pilot.press("ctrl+n")
    await until(lambda: isinstance(app.screen, ChooseScreen))
    options = app.screen.query_one("OptionList")
    options.highlighted = options.get_option_index(item)
    await pilot.press("enter")


async def answer(pilot, heading: str, text: str = "", key: str = "enter") -> None:
    """Wait for the prompt titled ``heading``, type ``text`` and press ``key``."""
    app = pilot.app
    await until(lambda: isinstance(app.screen, PromptScreen) and heading in app.screen.heading)
    await pilot.press(*text, key)


async def test_a_template_asks_each_parameter_then_opens_the_proposed_heinzel(
    cockpit_home: Home, client: LocalClient
) -> None:
    app = CockpitApp(cockpit_home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await choose(pilot, "digest")
        await answer(pilot, f"New digest: name (1 of {TEMPLATE_PARAMETERS})", "team-digest")
        await until(lambda: "New digest: notes (2 of" in getattr(app.screen, "heading", ""))
        about = app.screen.about
        assert "The folder of Markdown files to digest." in about and "keeps 'notes'" in about
        await answer(pilot, "New digest: notes (2 of", "meeting-notes")
        for number in range(3, TEMPLATE_PARAMETERS + 1):
            heading = f"({number} of {TEMPLATE_PARAMETERS})"
            await until(lambda h=heading: h in getattr(app.screen, "heading", ""))
            # The schedule is optional: "-" gives it empty (only when a file changes).
            optional = "leaves it empty" in app.screen.about
            await answer(pilot, heading, "-" if optional else "")
        await until(lambda: isinstance(app.screen, HeinzelScreen))
        page = app.screen
        assert isinstance(page, HeinzelScreen)
        table = table_of(app)
        await until(lambda: page.heinzel_id in table.items)
        assert table.items[page.heinzel_id].name == "team-digest"
        assert table.items[page.heinzel_id].state == "proposed"
        assert "team-digest: proposed — read the contract, a approves, x declines" in (
            messages_of(app)
        )
    assert (await names_and_states(client))["team-digest"] == "proposed"
    shown = await client.call(ops.SHOW, ops.HeinzelRef(ref="team-digest"))
    assert shown.heinzel.contract_version is None and shown.heinzel.schedule is None


async def test_a_sentence_and_a_name_become_a_proposed_heinzel(
    cockpit_home: Home, client: LocalClient
) -> None:
    app = CockpitApp(cockpit_home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await choose(pilot, "*sentence")
        await answer(pilot, "from a sentence", "every Friday at three, draft the weekly report")
        await answer(pilot, "its name", "friday-report")
        await until(lambda: isinstance(app.screen, HeinzelScreen))
        page = app.screen
        assert isinstance(page, HeinzelScreen)
        await until(lambda: page.heinzel_id in table_of(app).items)
        made = table_of(app).items[page.heinzel_id]
        assert (made.name, made.state) == ("friday-report", "proposed")
        assert made.schedule == "0 15 * * FRI"


async def test_a_refused_heinzel_is_one_coded_toast_and_escape_creates_nothing(
    cockpit_home: Home, client: LocalClient
) -> None:
    before = await names_and_states(client)
    app = CockpitApp(cockpit_home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await choose(pilot, "changelog")
        for number in range(1, TEMPLATE_PARAMETERS + 1):
            await answer(pilot, f"({number} of {TEMPLATE_PARAMETERS})")
        refusal = "HZU030: changelog: a heinzel named 'changelog' already exists in namespace"
        await until(lambda: any(m.startswith(refusal) for m in messages_of(app)))
        assert isinstance(app.screen, HomeScreen)
        await choose(pilot, "digest")
        await answer(pilot, "name (1 of", "never-made")
        await answer(pilot, "notes (2 of", key="escape")
        await until(lambda: isinstance(app.screen, HomeScreen))
        await choose(pilot, "*sentence")
        await answer(pilot, "from a sentence", "a digest of my notes")
        await answer(pilot, "its name", key="escape")
        await until(lambda: isinstance(app.screen, HomeScreen))
        await pilot.press("ctrl+n")
        await until(lambda: isinstance(app.screen, ChooseScreen))
        await pilot.press("escape")
        await until(lambda: isinstance(app.screen, HomeScreen))
        await until(lambda: not any(w.group == "new-heinzel" for w in app.workers))
        assert not any("proposed" in m for m in messages_of(app))
    assert await names_and_states(client) == before
