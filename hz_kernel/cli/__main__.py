"""``python -m hz_kernel.cli``: the command line without the cockpit (the daemon's own start)."""

from hz_kernel.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
