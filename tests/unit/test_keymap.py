"""issue 14 item 6: one key means one thing across screens, and the keymap stays overridable.

The decision is data in ``hz_tui.keymap`` (``KEY_MEANINGS``: key -> meaning,
``MEANING_OF``: binding id -> meaning); these tests walk every scope and hold
each binding to it, and check the override loader's refusals.
"""

from __future__ import annotations

from hz_tui import key_overrides, keymap


def test_issue14_item6_every_key_means_one_thing_on_every_screen() -> None:
    """A key bound on two screens does the same kind of thing on both (moving, going back
    and opening share a meaning by nature); each binding's meaning is the key table's."""
    wrong = []
    meanings: dict[str, set[str]] = {}
    for scope in keymap.SCOPES:
        for binding in scope.bindings:
            assert binding.id, f"{scope.title}: a binding without an id cannot be overridden"
            meaning = keymap.MEANING_OF.get(binding.id)
            for key in binding.key.split(","):
                meanings.setdefault(key, set()).add(str(meaning))
                if keymap.KEY_MEANINGS.get(key) != meaning:
                    wrong.append(f"{scope.title}: {key} runs {binding.id} ({meaning})")
    assert wrong == [], "\n".join(wrong)
    assert {key: m for key, m in meanings.items() if len(m) > 1} == {}
    assert set(keymap.MEANING_OF) == keymap.binding_ids()


def test_issue14_item6_the_keys_that_meant_two_things_mean_one() -> None:
    """The conflicts the issue names: v, m, n, d and R each keep one meaning, and the keys
    of the conventions (/ n N a x e r ? F1) mean what lazygit and k9s users expect."""

    def ids_on(key: str) -> set[str]:
        return {
            b.id or "" for scope in keymap.SCOPES for b in scope.bindings if key in b.key.split(",")
        }

    assert ids_on("v") == {"heinzel.contract"}
    assert ids_on("m") == {"heinzel.conversation"}
    assert ids_on("n") == {"transcript.next", "review.next"}
    assert ids_on("N") == {"transcript.previous", "review.previous"}
    assert ids_on("d") == {"contract.diff", "review.markdown"}
    assert ids_on("R") == {"act.retire"}
    assert ids_on("ctrl+r") == {"daemon.restart"}
    assert ids_on("ctrl+n") == {"home.new"}
    assert ids_on("slash") == {"home.filter", "transcript.search", "review.filter"}
    assert ids_on("question_mark") == {"app.help", "help.close_f1"}
    assert ids_on("x") == {"act.reject", "contract.reject", "review.reject"}
    assert ids_on("r") == {"home.refresh", "heinzel.refresh", "daemon.refresh", "graph.refresh"}


def test_issue14_item6_the_default_keymap_has_no_clash_within_a_screen() -> None:
    """No screen or widget holds two bindings on one key."""
    for node in keymap.NODES:
        keys = [key for b in node for key in b.key.split(",")]
        assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]
    assert key_overrides.resolve({}) == ({}, [])


def test_issue14_item6_bad_overrides_are_left_out_with_a_coded_line_each() -> None:
    """An unknown id (HZU230), no key (HZU231) and two ids on one key of one screen
    (HZU232) are each one line; the good overrides still apply."""
    applied, problems = key_overrides.resolve(
        {
            "review.nonsense": "z",
            "home.filter": " , ",
            "review.approve": "x",
            "review.markdown": "M",
        }
    )
    assert applied == {"review.markdown": "M"}
    assert [line[:6] for line in problems] == ["HZU230", "HZU231", "HZU232"]
    assert all("\n" not in line for line in problems)
    assert "review.nonsense" in problems[0] and "'x'" in problems[2]
    assert "review.approve" in problems[2] and "review.reject" in problems[2]


def test_issue14_item6_a_renamed_id_still_applies_to_the_binding_it_became() -> None:
    """``home.review`` (v on the home; v is now only a heinzel's contract) became F4's
    ``app.review``; an override naming the old id rebinds the new one."""
    assert key_overrides.resolve({"home.review": "ctrl+o"}) == ({"app.review": "ctrl+o"}, [])
    assert keymap.shown_keys("app.review", {"app.review": "ctrl+o"}) == "Ctrl+O"


def test_attack_an_override_that_names_one_key_twice_applies_once() -> None:
    """``"q,q"`` (or a clash between a binding listing a key twice and another) never
    crashes the cockpit's start: the key counts once."""
    assert key_overrides.resolve({"home.quit": "q,q"}) == ({"home.quit": "q"}, [])
    assert key_overrides.resolve({"table.open": "enter, enter"}) == ({"table.open": "enter"}, [])
    applied, problems = key_overrides.resolve({"home.quit": "slash,slash"})
    assert applied == {} and [line[:6] for line in problems] == ["HZU232"]


def test_attack_keys_that_are_no_key_names_are_left_out_and_never_shown_raw() -> None:
    """Escape sequences, a bell, a space or a 5,000-letter value are no key: HZU231, quoted
    with its controls escaped and cut short, so the notice itself drives no terminal."""
    hostile = {
        "review.select": "\x1b[2J",
        "home.filter": "\x1b]0;PWNED\x07",
        "table.sort": "S" * 5000,
        "review.approve": " ",
    }
    applied, problems = key_overrides.resolve(hostile)
    assert applied == {}
    assert [line[:6] for line in problems] == ["HZU231"] * 4
    assert not any(c in line for line in problems for c in "\x1b\x07")
    assert all(len(line) < 200 for line in problems)
    fine = {"review.select": "ctrl+shift+space", "home.filter": "%", "review.approve": "Y"}
    assert key_overrides.resolve(fine) == (fine, [])


def test_attack_a_screen_key_on_one_of_the_apps_keys_is_a_clash() -> None:
    """F1 is help everywhere: a screen binding moved onto it would hide help there (and an
    app binding moved onto a screen's key would never run there): HZU232, left out."""
    applied, problems = key_overrides.resolve({"table.reverse": "f1"})
    assert applied == {} and [line[:6] for line in problems] == ["HZU232"]
    applied, problems = key_overrides.resolve({"app.quit": "j"})
    assert applied == {} and [line[:6] for line in problems] == ["HZU232"]
    assert key_overrides.resolve({"app.quit": "ctrl+x"}) == ({"app.quit": "ctrl+x"}, [])
    applied, problems = key_overrides.resolve({"home.filter": "?"})
    assert applied == {} and "HZU232" in problems[0], "? is question_mark, help's key"
