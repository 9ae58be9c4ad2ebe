"""``python -m etu_tui.cli`` is ``etu``."""

from etu_tui.cli import main

raise SystemExit(main())
