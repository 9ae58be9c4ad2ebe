"""etu: the Textual console and CLI for ExecuTorch programs on Arm Ethos-U NPUs.

Importing this package is cheap: Textual loads only with ``etu.tui.app``, and torch or
executorch never load from here.
"""
