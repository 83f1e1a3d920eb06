"""Every version of a heinzel's contract, kept forever under ``<heinzel>/contract/``.

``v<n>.prose.md`` is the text as written and ``v<n>.compiled.json`` its
compiled form. The text is written last, so a version exists exactly when
its text file does; a crash between the two, or a damaged compiled file, is
repaired by writing the same version again. A version is never rewritten with
different text: a draft names the version that made it, forever.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from pydantic import ValidationError

from hz_kernel.contracts.compile import compile_contract
from hz_kernel.contracts.model import FORMAT_VERSION, CompiledContract, ContractError
from hz_kernel.store.fsutil import atomic_write, ensure_private_dir, is_regular_file, read_nofollow

_VERSION_FILE = re.compile(r"v([1-9][0-9]{0,8})\.prose\.md")


class ContractVersions:
    """The numbered versions of one heinzel's contract."""

    def __init__(self, heinzel_dir: Path) -> None:
        self.directory = heinzel_dir / "contract"

    def text_path(self, number: int) -> Path:
        return self.directory / f"v{number}.prose.md"

    def compiled_path(self, number: int) -> Path:
        return self.directory / f"v{number}.compiled.json"

    def write(self, number: int, text: str, compiled: CompiledContract) -> None:
        """Store version ``number``; writing the same text again is a no-op, other text an error."""
        place = str(self.text_path(number))
        if number < 1:
            raise ContractError("HZC083", f"versions start at 1, not {number}", place)
        if compile_contract(text, source=place) != compiled:
            raise ContractError(
                "HZC084", "the compiled form given does not match the text of this version", place
            )
        existing = self._existing_text(number)
        if existing is not None:
            if existing != text:
                raise ContractError(
                    "HZC080",
                    f"version {number} already exists with different text; versions are "
                    f"never rewritten, write version {self._next()} instead",
                    place,
                )
            if not self._compiled_readable(number):
                atomic_write(self.compiled_path(number), _encode(compiled))
            return
        if number != self._next():
            raise ContractError(
                "HZC083", f"the next version is {self._next()}, not {number}", place
            )
        ensure_private_dir(self.directory)
        atomic_write(self.compiled_path(number), _encode(compiled))
        atomic_write(self.text_path(number), text.encode("utf-8"))

    def all(self) -> list[int]:
        """The stored version numbers, ascending."""
        try:
            names = [entry.name for entry in self.directory.iterdir()]
        except (FileNotFoundError, NotADirectoryError):
            return []
        numbers = (_VERSION_FILE.fullmatch(name) for name in names)
        return sorted(
            int(match.group(1))
            for match in numbers
            if match and is_regular_file(self.directory / match.group(0))
        )

    def latest(self) -> int | None:
        numbers = self.all()
        return numbers[-1] if numbers else None

    def text(self, number: int) -> str:
        """A version's text as written (``HZC082`` when there is no such version)."""
        text = self._existing_text(number)
        if text is None:
            raise ContractError(
                "HZC082", f"there is no contract version {number}", str(self.text_path(number))
            )
        return text

    def read(self, number: int) -> tuple[str, CompiledContract]:
        """The text and compiled form of a version, as they were stored."""
        text = self.text(number)
        compiled_place = str(self.compiled_path(number))
        try:
            compiled = CompiledContract.model_validate_json(
                read_nofollow(self.compiled_path(number))
            )
        except FileNotFoundError:
            raise ContractError(
                "HZC081", f"the compiled form of version {number} is missing", compiled_place
            ) from None
        except (OSError, ValidationError, ValueError):
            raise ContractError(
                "HZC081", f"the compiled form of version {number} is damaged", compiled_place
            ) from None
        if compiled.format != FORMAT_VERSION:
            compiled = _recompiled(text, compiled, compiled_place)
        return text, compiled

    def diff(self, a: int, b: int) -> str:
        """A unified diff from version ``a``'s text to version ``b``'s."""
        return text_diff(self.text(a), self.text(b), f"v{a}.prose.md", f"v{b}.prose.md")

    def _next(self) -> int:
        return (self.latest() or 0) + 1

    def _compiled_readable(self, number: int) -> bool:
        """True if the stored compiled form loads; one that doesn't is rebuilt from the text."""
        try:
            CompiledContract.model_validate_json(read_nofollow(self.compiled_path(number)))
        except (OSError, ValidationError, ValueError):
            return False
        return True

    def _existing_text(self, number: int) -> str | None:
        path = self.text_path(number)
        try:
            data = read_nofollow(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ContractError(
                "HZC081", f"cannot read version {number} ({exc.strerror})", str(path)
            ) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ContractError(
                "HZC081", f"the text of version {number} is not UTF-8", str(path)
            ) from None


def _recompiled(text: str, stored: CompiledContract, place: str) -> CompiledContract:
    """A form stored by an older compiler, compiled again from its approved text.

    The text is what the user approved; an older form may have filled in what
    the text left open (``agent.model: local`` where the home's default is
    meant). A text today's compiler refuses keeps its stored form.
    """
    try:
        return compile_contract(text, source=place)
    except ContractError:
        return stored


def text_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    """A unified diff between two contract texts."""
    return "".join(
        difflib.unified_diff(_lines(old), _lines(new), fromfile=old_name, tofile=new_name)
    )


def _lines(text: str) -> list[str]:
    """Lines that all end in a newline, so the last one diffs cleanly."""
    return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(True)]


def _encode(compiled: CompiledContract) -> bytes:
    return compiled.model_dump_json(indent=2).encode("utf-8") + b"\n"
