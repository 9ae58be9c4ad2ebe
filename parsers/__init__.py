"""Pure format decoders: bytes or text in, typed objects out.

Nothing here imports Textual, torch or executorch, starts a process or opens a port.
Every failure is a :class:`etu.parsers.errors.ParseError` that names the file, field and offset.
"""

from etu.parsers.errors import ParseError

__all__ = ["ParseError"]
