"""Stable error codes of the documents adapter (the HZE040–HZE059 block).

Scripts match on these, so a code keeps its meaning forever; ``docs/documents.md``
explains each one to users.
"""

from __future__ import annotations

PARENT_MISSING = "HZE040"
NOT_A_REGULAR_FILE = "HZE041"
SYMLINK_REFUSED = "HZE042"
NOT_UTF8_TEXT = "HZE043"
TOO_LARGE = "HZE044"
IO_FAILED = "HZE045"
BAD_ARGUMENT = "HZE046"
DAMAGED_SECTION = "HZE047"
KEEPS_CHANGING = "HZE048"
NO_SUCH_SECTION = "HZE049"
