"""The daemon's start record: a home it cannot be written in refuses the start in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from hz_kernel.daemon import startenv
from hz_kernel.errors import HzError
from hz_kernel.home import Home


def test_a_home_the_daemon_cannot_write_its_start_record_in_is_a_coded_refusal(
    tmp_path: Path,
) -> None:
    """Attack pass (issue 14): a home the daemon could not write to failed its start with
    ``HZX001: internal error: PermissionError``; the record's write is a store error now."""
    home = Home.resolve(tmp_path / "home", create=True)
    (home.root / startenv.START_RECORD_NAME).mkdir()  # where the record goes, not writable

    with pytest.raises(HzError) as refused:
        startenv.write_record(home)

    assert refused.value.code == "HZS090"
    assert startenv.START_RECORD_NAME in refused.value.one_line()
