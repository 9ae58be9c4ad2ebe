"""``python -m etu.tui.cli`` is ``etu``."""

from etu.tui.cli import main

raise SystemExit(main())
