"""GNU ld linker scripts: the ``MEMORY`` block, and where ``SECTIONS`` puts load images.

The MEMORY block is read exactly: ``NAME (attr) : ORIGIN = expr, LENGTH = expr`` with
numbers in hex, octal or decimal, ``K``/``M`` suffixes, arithmetic, ``ORIGIN()``/``LENGTH()``
of earlier regions and constants assigned earlier in the script. A line of MEMORY it cannot
read is a ParseError naming the line, because a wrong region size would make every usage
figure wrong.

SECTIONS is only scanned, for one fact GNU ld's memory report depends on: which output
sections name their load address with ``AT(expr)`` (ld does not count that image in any
region) and which with ``AT> REGION`` (ld counts it in REGION). Whatever the scan cannot
follow is skipped with a warning, never an error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from etu.parsers.errors import FormatError, WrongKindError
from etu.parsers.files import MiB, read_regular


@dataclass(frozen=True, slots=True)
class MemoryRegion:
    """One ``MEMORY`` entry, as declared (no usage)."""

    name: str
    origin: int
    length: int
    attributes: str = ""

    @property
    def end(self) -> int:
        return self.origin + self.length

    def contains(self, address: int) -> bool:
        return self.origin <= address < self.end


@dataclass(frozen=True, slots=True)
class ScriptSection:
    """An output section statement of SECTIONS, as far as load addresses go."""

    name: str
    region: str | None  # ``> REGION``
    lma_region: str | None  # ``AT> REGION``, or inherited from the previous statement
    load_base: bool  # ``AT(expr)``
    fixed_address: bool  # ``name (expr) :``

    @property
    def charges_load_image(self) -> bool:
        """Whether ld counts this section's load image in ``lma_region`` (ldlang.c rule)."""
        return self.lma_region is not None and self.lma_region != self.region


@dataclass(slots=True)
class LinkerScript:
    source: str
    regions: list[MemoryRegion]
    sections: list[ScriptSection] = field(default_factory=list)
    constants: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def section(self, name: str) -> ScriptSection | None:
        return next((s for s in self.sections if s.name == name), None)


# ------------------------------------------------------------------------ expressions

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:0[xX][0-9a-fA-F]+|[0-9]+)[kKmM]?)"
    r"|(?P<name>[A-Za-z_.$][\w.$]*)"
    r"|(?P<op><<|>>|[-+*/%&|~()]))"
)


_SIMPLE_NUMBER = re.compile(r"(?:0[xX][0-9a-fA-F]{1,30}|[0-9]{1,30})[kKmM]?")


class _ExprError(Exception):
    pass


# Bounds that keep evaluation linear in the text: addresses and sizes are 64-bit at most, a
# literal has at most MAX_DIGITS digits, parentheses and unary signs nest MAX_DEPTH deep.
VALUE_LIMIT = 1 << 64
MAX_BLOCKS = 16  # real scripts have one MEMORY and one SECTIONS block
MAX_SCRIPT_BYTES = 16 * MiB
MAX_DIGITS = 24
MAX_DEPTH = 32
MAX_TOKENS = 500


def _bounded(value: int) -> int:
    if not -VALUE_LIMIT < value < VALUE_LIMIT:
        raise _ExprError("value does not fit in 64 bits")
    return value


def _shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for an error message, cut so a huge input gives a short line."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _number(text: str) -> int:
    if len(text) > MAX_DIGITS + 3:
        raise _ExprError(f"number {_shown(text, 24)} has more than {MAX_DIGITS} digits")
    scale = 1
    if text[-1] in "kK":
        scale, text = 1024, text[:-1]
    elif text[-1] in "mM":
        scale, text = 1024 * 1024, text[:-1]
    if text[:2] in ("0x", "0X"):
        value = int(text, 16)
    elif len(text) > 1 and text[0] == "0":
        if not set(text) <= set("01234567"):
            raise _ExprError(f"{text!r} is not an octal number")
        value = int(text, 8)
    else:
        value = int(text)
    return _bounded(value * scale)


def evaluate(text: str, lookup: Callable[[str, str | None], int] | None = None) -> int:
    """Evaluate a linker-script integer expression. ``lookup(name, arg)`` resolves symbols
    (``arg`` None) and ``ORIGIN(arg)``/``LENGTH(arg)`` calls (``name`` the function)."""
    text = text.strip()
    if _SIMPLE_NUMBER.fullmatch(text):  # most ORIGIN/LENGTH values: no tokenising
        return _number(text)
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise _ExprError(f"unexpected {text[pos:].strip()[:20]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    if len(tokens) > MAX_TOKENS:
        raise _ExprError(f"expression too long (over {MAX_TOKENS} tokens)")
    index = 0
    depth = 0

    def peek() -> tuple[str, str] | None:
        return tokens[index] if index < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal index
        if index >= len(tokens):
            raise _ExprError("expression ends early")
        index += 1
        return tokens[index - 1]

    def primary() -> int:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise _ExprError(f"nested more than {MAX_DEPTH} deep")
        try:
            return _primary()
        finally:
            depth -= 1

    def _primary() -> int:
        kind, value = take()
        if kind == "num":
            return _number(value)
        if kind == "op" and value == "(":
            result = binary(0)
            if take() != ("op", ")"):
                raise _ExprError("missing ')'")
            return result
        if kind == "op" and value in "-~+":
            operand = primary()
            return _bounded(-operand if value == "-" else ~operand if value == "~" else operand)
        if kind == "name":
            if peek() == ("op", "("):
                take()
                arg_kind, arg = take()
                if arg_kind != "name" or take() != ("op", ")"):
                    raise _ExprError(f"cannot read {value}(...)")
                if lookup is None:
                    raise _ExprError(f"{value}({arg}) is not known here")
                return lookup(value, arg)
            if lookup is None:
                raise _ExprError(f"symbol {value!r} is not known here")
            return lookup(value, None)
        raise _ExprError(f"unexpected {value!r}")

    precedence = {"|": 1, "&": 2, "<<": 3, ">>": 3, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5}

    def binary(level: int) -> int:
        left = primary()
        while (token := peek()) is not None and token[0] == "op" and token[1] in precedence:
            op = token[1]
            if precedence[op] <= level:
                break
            take()
            right = binary(precedence[op])
            if op in "/%" and right == 0:
                raise _ExprError("division by zero")
            if op in ("<<", ">>") and not 0 <= right < 128:
                raise _ExprError(f"shift by {right}")
            left = _bounded(
                {
                    "|": lambda a, b: a | b,
                    "&": lambda a, b: a & b,
                    "<<": lambda a, b: a << b,
                    ">>": lambda a, b: a >> b,
                    "+": lambda a, b: a + b,
                    "-": lambda a, b: a - b,
                    "*": lambda a, b: a * b,
                    "/": lambda a, b: a // b,
                    "%": lambda a, b: a % b,
                }[op](left, right)
            )
        return left

    if not tokens:
        raise _ExprError("empty expression")
    result = binary(0)
    if index != len(tokens):
        raise _ExprError(f"unexpected {tokens[index][1]!r}")
    return result


def parse_size(text: str) -> int:
    """A number as the MEMORY block writes it (``0x80000``, ``512K``, ``2M``, ``0x100 * 4``)."""
    try:
        value = evaluate(text)
    except _ExprError as error:
        raise FormatError(f"cannot read {_shown(text)} as a size: {error}") from None
    if value < 0:
        raise FormatError(f"{_shown(text)} is negative")
    return value


# ----------------------------------------------------------------------------- script


def _blank_comments(text: str) -> str:
    """Replace ``/* */`` comments by spaces, keeping newlines so line numbers stay right."""
    out = []
    pos = 0
    while True:
        start = text.find("/*", pos)
        if start < 0:
            out.append(text[pos:])
            break
        end = text.find("*/", start + 2)
        out.append(text[pos:start])
        comment = text[start : (len(text) if end < 0 else end + 2)]
        out.append(re.sub(r"[^\n]", " ", comment))
        if end < 0:
            break
        pos = end + 2
    return "".join(out)


def _matching_brace(text: str, open_at: int) -> int:
    depth = 0
    for pos in range(open_at, len(text)):
        if text[pos] == "{":
            depth += 1
        elif text[pos] == "}":
            depth -= 1
            if depth == 0:
                return pos
    return -1


# A MEMORY line, ``NAME (attr) : ORIGIN = origin, LENGTH = length``, is read as its head (up
# to ORIGIN's "=") and the first ``, LENGTH =`` after it, the values stripped in Python
# (_entry). Lazy ``(.+?)\s*,`` groups retried ``\s*`` at every character: quadratic on a line
# with a long run of spaces inside (issue 20). Possessive quantifiers where giving characters
# back cannot help a match keep every pattern here linear.
_ENTRY_HEAD = re.compile(
    r"(?P<name>[A-Za-z_.$][\w.$-]*+)\s*+(?:\((?P<attr>[^)]*+)\))?+\s*+:\s*+"
    r"(?:ORIGIN|org|o)\s*+="
)
_ENTRY_LENGTH = re.compile(r",\s*+(?:LENGTH|len|l)\s*+=")
# Nested repetitions of the same letters (``[rwx]+`` inside ``(...)*``) backtrack
# exponentially on a long run of letters that then fails; possessive runs read it once.
_ATTRIBUTES = re.compile(r"!?[rwxailRWXAIL]++(?:\s*+!?[rwxailRWXAIL]++)*+")
# ``^\s*`` would cross newlines: every line of a run of blank lines rescanned all the rest.
_ASSIGNMENT = re.compile(r"^[^\S\n]*+(?P<name>[A-Za-z_][\w.$]*+)\s*+=\s*+(?P<expr>[^;=\n]+);", re.M)
_KEYWORD_BLOCK = re.compile(r"\b(MEMORY|SECTIONS)\s*\{")


def parse_linker_script(text: str, source: str = "<linker script>") -> LinkerScript:
    """Read the MEMORY block(s) exactly and scan SECTIONS. Raises ParseError naming the line."""
    if "\x00" in text:
        raise WrongKindError("binary data, not a linker script", source=source)
    clean = _blank_comments(text)
    blocks = []
    for m in _KEYWORD_BLOCK.finditer(clean):
        blocks.append((m.group(1), m.start(), m.end() - 1))
        if len(blocks) > MAX_BLOCKS:  # each is scanned to its closing brace: keep it linear
            raise FormatError(
                f"more than {MAX_BLOCKS} MEMORY/SECTIONS blocks", field=f"offset {m.start()}"
            ).with_source(source)
    memory_blocks = [b for b in blocks if b[0] == "MEMORY"]
    if not memory_blocks:
        raise FormatError(
            "no MEMORY { ... } block: nothing says where the regions are"
        ).with_source(source)
    script = LinkerScript(source=source, regions=[])
    # Constants assigned before MEMORY (e.g. ``_flash = 256K;``) may size regions.
    first_memory = memory_blocks[0][1]
    for match in _ASSIGNMENT.finditer(clean[:first_memory]):
        try:
            script.constants[match.group("name")] = evaluate(
                match.group("expr"), _lookup_for(script, None)
            )
        except _ExprError:
            continue
    sections_at: list[tuple[int, int]] = []
    for kind, _start, open_at in blocks:
        close_at = _matching_brace(clean, open_at)
        line = clean.count("\n", 0, open_at) + 1
        if close_at < 0:
            raise FormatError(f"{kind} block is not closed", field=f"line {line}").with_source(
                source
            )
        if kind == "MEMORY":
            _parse_memory(script, clean, open_at, close_at)
        else:
            sections_at.append((open_at, close_at))
    if not script.regions:
        raise FormatError("the MEMORY block declares no region").with_source(source)
    for open_at, close_at in sections_at:
        _scan_sections(script, clean[open_at + 1 : close_at])
    return script


def read_linker_script(path: str | os.PathLike[str]) -> LinkerScript:
    source = str(path)
    raw = read_regular(path, "a linker script", MAX_SCRIPT_BYTES)
    if raw.startswith(b"\x7fELF"):
        raise WrongKindError("an ELF file, not a linker script", source=source)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise WrongKindError(
            "not text (not UTF-8), not a linker script", offset=error.start, source=source
        ) from None
    return parse_linker_script(text, source)


def _lookup_for(
    script: LinkerScript, line: int | None, index: dict[str, MemoryRegion] | None = None
) -> Callable[[str, str | None], int]:
    def lookup(name: str, arg: str | None) -> int:
        if arg is None:
            if name in script.constants:
                return script.constants[name]
            raise _ExprError(f"symbol {name!r} has no value known before this line")
        if index is not None:
            region = index.get(arg)
        else:
            region = next((r for r in script.regions if r.name == arg), None)
        if region is None:
            raise _ExprError(f"{name}({arg}): no region {arg!r} declared before this line")
        if name in ("ORIGIN", "ORG"):
            return region.origin
        if name in ("LENGTH", "LEN"):
            return region.length
        raise _ExprError(f"function {name}() is not supported in MEMORY")

    return lookup


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time."""
    position = 0
    while (end := text.find("\n", position)) != -1:
        yield text[position:end]
        position = end + 1
    yield text[position:]


def _entry(line: str) -> tuple[str, str, str, str] | None:
    """(name, attributes, origin, length) of a stripped MEMORY line, or None. The origin runs
    to the first ``, LENGTH =`` with text after it, whitespace around each value is not
    part of it, and one ``,`` or ``;`` may end the line."""
    head = _ENTRY_HEAD.match(line)
    if head is None:
        return None
    attributes = (head.group("attr") or "").strip()
    start = head.end()
    while start < len(line) and line[start].isspace():
        start += 1
    length_at = _ENTRY_LENGTH.search(line, start + 1)
    while length_at is not None and length_at.end() == len(line):  # nothing after "="
        length_at = _ENTRY_LENGTH.search(line, length_at.start() + 1)
    if length_at is None and start > head.end():
        # "ORIGIN = , LENGTH = y": the origin is the space before the comma (an error later)
        length_at = _ENTRY_LENGTH.match(line, start)
        if length_at is None or length_at.end() == len(line):
            return None
        start -= 1
    if length_at is None:
        return None
    origin = line[start : length_at.start()].rstrip() or line[start]
    length = line[length_at.end() :].strip()
    if length[-1:] in (",", ";") and length[:-1].rstrip():
        length = length[:-1].rstrip()
    return head.group("name"), attributes, origin, length


def _parse_memory(script: LinkerScript, clean: str, open_at: int, close_at: int) -> None:
    first_line = clean.count("\n", 0, open_at) + 1
    body = clean[open_at + 1 : close_at]
    index = {r.name: r for r in script.regions}  # one dict: thousands of regions stay linear
    for offset, raw in enumerate(_lines(body)):  # lazily: no list of every line
        line_no = first_line + offset
        line = raw.strip()
        if not line:
            continue
        where = f"line {line_no}"
        if line.startswith("#"):
            raise FormatError(
                f"preprocessor line {line!r} inside MEMORY: run the C preprocessor first "
                "(arm-none-eabi-gcc -E -P -x c script.ld)",
                field=where,
            ).with_source(script.source)
        entry = _entry(line)
        if entry is None:
            raise FormatError(
                f"cannot read {line!r} (expected NAME (attr) : ORIGIN = x, LENGTH = y)",
                field=where,
            ).with_source(script.source)
        name, attributes, *texts = entry
        if attributes and not _ATTRIBUTES.fullmatch(attributes):
            raise FormatError(f"unknown region attributes {attributes!r}", field=where).with_source(
                script.source
            )
        values = []
        for part, expression in zip(("ORIGIN", "LENGTH"), texts, strict=True):
            try:
                values.append(evaluate(expression, _lookup_for(script, line_no, index)))
            except _ExprError as error:
                raise FormatError(
                    f"cannot evaluate {part} = {_shown(expression)}: {error}",
                    field=where,
                ).with_source(script.source) from None
        if name in index:
            raise FormatError(f"region {name!r} declared twice", field=where).with_source(
                script.source
            )
        if values[0] < 0 or values[1] < 0:
            raise FormatError(
                f"region {name!r} has a negative origin or length", field=where
            ).with_source(script.source)
        region = MemoryRegion(name, values[0], values[1], attributes)
        script.regions.append(region)
        index[name] = region


_TRAILER = re.compile(
    r"\s*(?:AT\s*>\s*(?P<lma>[\w.$]+)|>\s*(?P<vma>[\w.$]+)|:\s*(?P<phdr>[\w.$]+)|=\s*(?P<fill>\S+))"
)
# A statement's name; the rest of its header is stripped in Python (a lazy ``(.*?)\s*$`` retried
# ``\s*$`` at every character: quadratic on a header with a long run of spaces; issue 20).
_HEADER_NAME = re.compile(r"\s*+(?P<name>[^\s:({]++)")


def _scan_sections(script: LinkerScript, body: str) -> None:
    """Collect output section statements (name, regions, AT) from a SECTIONS body."""
    pos = 0
    previous: ScriptSection | None = None
    while True:
        open_at = body.find("{", pos)
        if open_at < 0:
            break
        close_at = _matching_brace(body, open_at)
        if close_at < 0:
            script.warnings.append(f"{script.source}: SECTIONS has an unclosed brace; scan stopped")
            return
        header = _statement_head(body[pos:open_at])
        region = lma_region = None
        end = close_at + 1
        while (trailer := _TRAILER.match(body, end)) is not None:
            region = trailer.group("vma") or region
            lma_region = trailer.group("lma") or lma_region
            end = trailer.end()
        pos = end
        head = _HEADER_NAME.match(header)
        if head is None or head.group("name") in ("OVERLAY", "PHDRS", "MEMORY"):
            previous = None
            continue
        name, rest = head.group("name"), header[head.end() :].strip()
        colon = _top_level_colon(rest)
        if colon < 0:
            script.warnings.append(
                f"{script.source}: cannot follow the SECTIONS statement {header.strip()[:40]!r}"
            )
            previous = None
            continue
        before, after = rest[:colon], rest[colon + 1 :]
        load_base = re.match(r"\s*AT\s*\(", after) is not None
        fixed = re.sub(r"\((?:NOLOAD|COPY|INFO|DSECT|OVERLAY|READONLY)\)", "", before).strip()
        if (
            lma_region is None
            and not load_base
            and not fixed
            and previous is not None
            and previous.region == region
        ):
            lma_region = previous.lma_region  # ld propagates the previous section's AT>
        previous = ScriptSection(name, region, lma_region, load_base, bool(fixed))
        script.sections.append(previous)


def _statement_head(text: str) -> str:
    """The output section header at the end of ``text`` (after any ``;``-ended statements)."""
    lines = [line for line in text.split("\n") if not line.lstrip().startswith("#")]
    return "\n".join(lines).rsplit(";", 1)[-1]


def _top_level_colon(text: str) -> int:
    depth = 0
    for pos, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == ":" and depth == 0:
            return pos
    return -1
