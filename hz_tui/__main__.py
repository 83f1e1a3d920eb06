"""``python -m hz_tui``: the ``hz`` command, as ``hz serve`` starts it for each browser tab."""

from hz_tui.entry import main

raise SystemExit(main())
