"""The error-code reference lists every HZC code the contract modules can raise."""

from __future__ import annotations

import re
from pathlib import Path

import hz_kernel.contracts

PACKAGE = Path(hz_kernel.contracts.__file__).parent
DOCS = PACKAGE.parents[1] / "docs"


def test_every_contract_error_code_is_documented() -> None:
    raised = {
        code
        for path in PACKAGE.glob("*.py")
        for code in re.findall(r"\"(HZC\d{3})\"", path.read_text(encoding="utf-8"))
    }
    documented = set(
        re.findall(r"^\| (HZC\d{3}) \|", (DOCS / "error-codes-contracts.md").read_text(), re.M)
    )

    assert len(raised) > 40
    assert raised - documented == set()
    assert documented - raised == set()


def test_the_format_guide_names_every_hz_key() -> None:
    guide = (DOCS / "contracts.md").read_text(encoding="utf-8")
    keys = [*hz_kernel.contracts.HzTable.model_fields, *hz_kernel.contracts.InputSpec.model_fields]
    assert [key for key in keys if f"`{key}`" not in guide] == []
