"""Firmware ELF files: sections (run and load address), PT_LOAD segments and sized symbols.

Built on pyelftools, with the tables checked against the file size first, so a truncated
or damaged ELF shows whatever is still readable (with a warning) instead of failing
half-way, and a file that is no ELF at all is a one-line ParseError saying what it is.

The load address (LMA) of a section is not stored in ELF section headers; like ld's map,
it is taken from the PT_LOAD segment whose file image holds the section's bytes
(``p_paddr + sh_offset - p_offset``). That is right even for sections ld could not fit
in their segment's address range (the runner's ``.data``, ``.sram.data`` and ``.rodata``:
"can't be allocated in segment"), where objdump falls back to LMA = VMA.
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from etu.parsers.errors import FormatError, ParseError, TruncatedError, WrongKindError
from etu.parsers.files import GiB, check_regular, open_regular

ELF_MAGIC = b"\x7fELF"
MAX_ELF_BYTES = 2 * GiB  # read on demand, not whole: the cap only refuses absurd files
CHANGED = "file changed while read"


class ElfFile:
    """An ELF file read on demand with ``pread``, never mapped: a firmware relinked while etu
    shows it (the linker truncates it first) gives "file changed while read", where a
    mapping would die of SIGBUS on the missing pages. Slicing returns bytes."""

    def __init__(self, fd: int, source: str) -> None:
        self.fd = fd
        self.source = source
        self.info = os.fstat(fd)

    def __len__(self) -> int:
        return self.info.st_size

    def __getitem__(self, where: slice) -> bytes:
        start, stop, _ = where.indices(len(self))
        return self.pread(start, max(stop - start, 0))

    def pread(self, offset: int, size: int) -> bytes:
        chunks, done = [], 0
        while done < size:
            try:
                chunk = os.pread(self.fd, size - done, offset + done)
            except OSError as error:
                raise ParseError(error.strerror or str(error), source=self.source) from None
            if not chunk:
                raise ParseError(
                    f"{CHANGED} (now shorter than {offset + done:,} bytes)", source=self.source
                )
            chunks.append(chunk)
            done += len(chunk)
        now = os.fstat(self.fd)
        if (now.st_size, now.st_mtime_ns) != (self.info.st_size, self.info.st_mtime_ns):
            raise ParseError(f"{CHANGED} (was {len(self):,} bytes)", source=self.source)
        return b"".join(chunks)

    def stream(self) -> io.BufferedReader:
        """A file object of its own (pyelftools seeks): reads past a shrunk end come back
        short, which pyelftools reports as an error."""
        return os.fdopen(os.dup(self.fd), "rb")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHF_MERGE, SHF_STRINGS, SHF_INFO_LINK, SHF_LINK_ORDER = 0x10, 0x20, 0x40, 0x80
SHF_OS_NONCONFORMING, SHF_GROUP, SHF_TLS, SHF_COMPRESSED = 0x100, 0x200, 0x400, 0x800
SHF_ARM_PURECODE, SHF_EXCLUDE = 0x20000000, 0x80000000
PF_X, PF_W, PF_R = 0x1, 0x2, 0x4

# readelf's letters, in readelf's order.
_SECTION_FLAG_LETTERS = (
    (SHF_WRITE, "W"), (SHF_ALLOC, "A"), (SHF_EXECINSTR, "X"), (SHF_MERGE, "M"),
    (SHF_STRINGS, "S"), (SHF_INFO_LINK, "I"), (SHF_LINK_ORDER, "L"),
    (SHF_OS_NONCONFORMING, "O"), (SHF_GROUP, "G"), (SHF_TLS, "T"), (SHF_COMPRESSED, "C"),
    (SHF_EXCLUDE, "E"),
)  # fmt: skip

# pyelftools' section type names that readelf spells differently.
_READELF_TYPES = {"GNU_versym": "VERSYM", "GNU_verneed": "VERNEED", "GNU_verdef": "VERDEF"}

MACHINE_NAMES = {
    "EM_ARM": "Arm (32-bit)", "EM_AARCH64": "AArch64", "EM_X86_64": "x86-64",
    "EM_386": "x86", "EM_RISCV": "RISC-V", "EM_XTENSA": "Xtensa",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Section:
    index: int
    name: str
    type: str  # readelf's name: PROGBITS, NOBITS, ARM_ATTRIBUTES, ...
    flags: int
    address: int  # run address (VMA)
    load_address: int  # LMA: where its bytes are loaded (see module docstring)
    size: int
    offset: int
    align: int
    truncated: bool = False  # its bytes reach past the end of the file

    @property
    def alloc(self) -> bool:
        return bool(self.flags & SHF_ALLOC)

    @property
    def executable(self) -> bool:
        return bool(self.flags & SHF_EXECINSTR)

    @property
    def writable(self) -> bool:
        return bool(self.flags & SHF_WRITE)

    @property
    def has_contents(self) -> bool:
        """Bytes in the file, loaded at run time (not NOBITS: .bss, NOLOAD pools)."""
        return self.type not in ("NOBITS", "NULL")

    @property
    def end(self) -> int:
        return self.address + self.size

    @property
    def load_end(self) -> int:
        return self.load_address + self.size

    @property
    def flag_text(self) -> str:
        text = "".join(letter for bit, letter in _SECTION_FLAG_LETTERS if self.flags & bit)
        if self.flags & SHF_ARM_PURECODE:
            text += "y"
        return text

    def contains(self, address: int) -> bool:
        return self.address <= address < self.end


@dataclass(frozen=True, slots=True)
class Segment:
    index: int
    type: str  # LOAD, NULL, ARM_EXIDX, ...
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int
    flags: int
    align: int
    sections: tuple[str, ...]  # readelf's section-to-segment mapping

    @property
    def flag_text(self) -> str:
        return (
            ("R" if self.flags & PF_R else " ")
            + ("W" if self.flags & PF_W else " ")
            + ("E" if self.flags & PF_X else " ")
        )


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    value: int  # as stored (Thumb functions have bit 0 set)
    size: int
    type: str  # FUNC, OBJECT, NOTYPE, SECTION, FILE, ...
    bind: str  # LOCAL, GLOBAL, WEAK
    section_index: int | str  # a section index, or ABS / UND / COM
    section: str | None  # the section's name; None for ABS/UND/COM

    @property
    def address(self) -> int:
        """Where it is: the value without the Thumb bit for functions."""
        return self.value & ~1 if self.type == "FUNC" else self.value


@dataclass(slots=True)
class ElfImage:
    """A decoded ELF. ``data`` (usually the open file) stays open for section reads until
    closed."""

    source: str
    file_size: int
    elf_class: int  # 32 or 64
    little_endian: bool
    machine: str  # pyelftools' name: EM_ARM, EM_X86_64, ...
    elf_type: str  # ET_EXEC, ET_REL, ET_DYN, ...
    entry: int
    flags: int
    sections: list[Section]
    segments: list[Segment]
    symbols: list[Symbol]
    has_symbol_table: bool
    data: bytes | ElfFile = field(repr=False)
    warnings: list[str] = field(default_factory=list)
    _closer: ElfFile | None = field(default=None, repr=False)

    @property
    def is_arm(self) -> bool:
        return self.machine == "EM_ARM"

    @property
    def machine_name(self) -> str:
        return MACHINE_NAMES.get(self.machine, self.machine.removeprefix("EM_"))

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def section_at(self, address: int) -> Section | None:
        """The allocated, non-empty section whose run addresses hold ``address``."""
        return next((s for s in self.sections if s.alloc and s.size and s.contains(address)), None)

    def symbol(self, name: str) -> Symbol | None:
        """The defined symbol called ``name`` (a global one if there are several)."""
        found = [s for s in self.symbols if s.name == name and s.section_index != "UND"]
        found.sort(key=lambda s: s.bind == "LOCAL")
        return found[0] if found else None

    def symbols_top(self, count: int | None = None) -> list[Symbol]:
        """Sized data and code symbols, largest first."""
        sized = [
            s
            for s in self.symbols
            if s.size > 0 and s.type not in ("SECTION", "FILE") and s.section_index != "UND"
        ]
        sized.sort(key=lambda s: (-s.size, s.name, s.value))
        return sized if count is None else sized[:count]

    def section_bytes(self, section: Section) -> bytes | None:
        """The section's bytes in the file; None for NOBITS or bytes past the end."""
        view = self.section_view(section)
        return None if view is None else bytes(view)

    def section_view(self, section: Section) -> memoryview | None:
        """Like ``section_bytes`` without a copy when the ELF is in memory."""
        return self.section_part(section, 0, section.size)

    def section_part(self, section: Section, start: int, size: int) -> memoryview | None:
        """``size`` bytes of the section's contents from ``start`` (both within it)."""
        if not section.has_contents or section.truncated:
            return None
        if start < 0 or size < 0 or start + size > section.size:
            return None
        offset = section.offset + start
        if isinstance(self.data, ElfFile):
            return memoryview(self.data.pread(offset, size))
        return memoryview(self.data)[offset : offset + size]

    def read_bytes(self, address: int, size: int) -> bytes | None:
        """``size`` bytes of the load image at run address ``address`` (initial values)."""
        section = self.section_at(address)
        if section is None or not section.has_contents or section.truncated:
            return None
        if address + size > section.end:
            return None
        start = section.offset + address - section.address
        return bytes(self.data[start : start + size])

    def read_word(self, address: int) -> int | None:
        raw = self.read_bytes(address, 4 if self.elf_class == 32 else 8)
        if raw is None:
            return None
        fmt = ("<" if self.little_endian else ">") + ("I" if self.elf_class == 32 else "Q")
        return struct.unpack(fmt, raw)[0]

    def close(self) -> None:
        closer, self._closer = self._closer, None
        self.data = b""
        if closer is not None:
            closer.close()

    def __enter__(self) -> ElfImage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- reading


def read_elf(path: str | os.PathLike[str]) -> ElfImage:
    """Open ``path`` and decode it (sections are read when asked for). Raises ParseError
    naming the file."""
    source = str(path)
    check_regular(path, "an ELF file", MAX_ELF_BYTES)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise WrongKindError("is a directory, not an ELF file", source=source) from None
    except OSError as error:
        raise ParseError(error.strerror or str(error), source=source) from None
    data = ElfFile(fd, source)
    try:
        if len(data) == 0:
            raise WrongKindError("empty file (0 bytes), not an ELF file", source=source)
        image = decode_elf(data, source)
    except BaseException:
        data.close()
        raise
    image._closer = data
    return image


def check_arm_firmware(path: str | os.PathLike[str]) -> None:
    """Raise ParseError (naming ``path``) unless it is a regular file holding a 32-bit Arm
    ELF: checked before anything loads it (QEMU runs any other file as raw bytes)."""
    source = os.fsdecode(path)
    fd, _size = open_regular(path, "a firmware ELF", 2 * GiB)
    try:
        head = os.pread(fd, 20, 0)
    except OSError as error:
        raise ParseError(error.strerror or str(error), source=source) from None
    finally:
        os.close(fd)
    if not head.startswith(ELF_MAGIC):
        raise WrongKindError(identify(head) if head else "empty file, not an ELF", source=source)
    if len(head) < 20 or head[4] != 1 or head[18:20] != b"\x28\x00":
        raise WrongKindError("an ELF for another machine, not a 32-bit Arm firmware",
                             source=source)  # fmt: skip


def identify(head: bytes) -> str:
    """What a file that is not an ELF is, from its first bytes."""
    if len(head) >= 8 and head[4:8] == b"ET12":
        return "an ExecuTorch program (.pte), not an ELF file"
    if len(head) >= 8 and head[4:6] == b"BP":
        return "an ExecuTorch bundled program (.bpte), not an ELF file"
    if head.startswith(b"!<arch>\n"):
        return "an ar archive (.a), not a linked ELF file"
    if head and all(32 <= b < 127 or b in (9, 10, 13) for b in head[:64]):
        return "a text file, not an ELF file"
    return f"not an ELF file (starts with {head[:4]!r}, expected {ELF_MAGIC!r})"


def decode_elf(data: bytes | ElfFile, source: str = "<bytes>") -> ElfImage:
    """Decode an ELF held in memory. Raises ParseError naming ``source``."""
    try:
        return _decode(data, source)
    except ParseError as error:
        raise error.with_source(source) from None


@contextlib.contextmanager
def _elftools_errors(what: str, offset: int | None = None) -> Iterator[None]:
    from elftools.common.exceptions import ELFError

    try:
        yield
    except (ELFError, struct.error, ValueError, IndexError, KeyError, AssertionError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise FormatError(message, field=what, offset=offset) from None
    except Exception as error:  # pyelftools' bundled construct raises its own classes
        if type(error).__module__.startswith("elftools"):
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise FormatError(message, field=what, offset=offset) from None
        raise


def _decode(data: bytes | ElfFile, source: str) -> ElfImage:
    size = len(data)
    if size == 0:
        raise WrongKindError("empty file (0 bytes), not an ELF file")
    head = bytes(data[:64])
    if head[:4] != ELF_MAGIC:
        raise WrongKindError(identify(head), field="e_ident", offset=0)
    if size < 6:
        raise TruncatedError(f"the file ends after {size} bytes of ELF identification")
    if head[4] not in (1, 2):
        raise FormatError(f"unknown ELF class {head[4]} (1 = 32-bit, 2 = 64-bit)",
                          field="e_ident[EI_CLASS]", offset=4)  # fmt: skip
    if head[5] not in (1, 2):
        raise FormatError(f"unknown data encoding {head[5]} (1 = little, 2 = big endian)",
                          field="e_ident[EI_DATA]", offset=5)  # fmt: skip
    elf_class = 32 if head[4] == 1 else 64
    header_size = 52 if elf_class == 32 else 64
    if size < header_size:
        raise TruncatedError(
            f"the {elf_class}-bit ELF header needs {header_size} bytes, the file has {size}",
            field="ELF header",
            offset=0,
        )
    stream = data.stream() if isinstance(data, ElfFile) else io.BytesIO(data)
    try:
        return _decode_stream(data, stream, size, head, elf_class, source)
    finally:
        stream.close()


def _decode_stream(data, stream, size: int, head: bytes, elf_class: int, source: str) -> ElfImage:
    from elftools.elf.elffile import ELFFile

    with _elftools_errors("ELF header", 0):
        elf = ELFFile(stream)
        header = elf.header
        machine = str(header["e_machine"])
        elf_type = str(header["e_type"])
    warnings: list[str] = []

    segments_raw = _program_headers(elf, header, size, warnings)
    sections, names_ok = _section_headers(elf, header, size, warnings)
    if segments_raw is None and sections is None:
        raise TruncatedError(
            "neither the program headers nor the section headers are inside the file "
            f"({size} bytes): truncated",
            field="e_phoff/e_shoff",
            offset=header["e_shoff"] or header["e_phoff"],
        )
    sections = sections or []
    segments_raw = segments_raw or []
    finished = [_with_load_address(s, segments_raw) for s in sections]
    segments = []
    for i, raw in enumerate(segments_raw):
        p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_flags, p_align = raw
        inside = tuple(
            s.name
            for s in finished
            if s.index and _in_segment(s, p_offset, p_vaddr, p_filesz, p_memsz, p_type)
        )
        segments.append(
            Segment(
                i, p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_flags, p_align, inside
            )
        )
    symbols, has_symtab = _symbols(elf, finished, size, warnings) if sections else ([], False)
    truncated = [s.name for s in finished if s.truncated]
    if truncated:
        warnings.append(
            f"truncated: the bytes of {len(truncated)} section(s) reach past the end of the "
            f"file ({size} bytes): {', '.join(truncated[:6])}{' ...' if len(truncated) > 6 else ''}"
        )
    if sections and not has_symtab:
        warnings.append(
            "no symbol table (stripped): pools and kernel sizes come from the ld map, "
            "if one is given, or from section names"
        )
    if not names_ok:
        warnings.append("the section name table is unreadable: sections are shown unnamed")
    if machine != "EM_ARM":
        warnings.append(
            f"not an Arm firmware: a {elf_class}-bit {MACHINE_NAMES.get(machine, machine)} "
            f"ELF ({machine}); the runner's regions and pools do not apply"
        )
    elif elf_type == "ET_REL":
        warnings.append("a relocatable object (ET_REL), not a linked firmware: no addresses yet")
    image = ElfImage(
        source=source, file_size=size, elf_class=elf_class, little_endian=head[5] == 1,
        machine=machine, elf_type=elf_type, entry=header["e_entry"], flags=header["e_flags"],
        sections=finished, segments=segments, symbols=symbols, has_symbol_table=has_symtab,
        data=data, warnings=warnings,
    )  # fmt: skip
    _segment_warnings(image)
    return image


def _program_headers(elf, header, size: int, warnings: list[str]) -> list[tuple] | None:
    count, entsize, offset = header["e_phnum"], header["e_phentsize"], header["e_phoff"]
    if count == 0:
        return []
    if offset + count * entsize > size:
        warnings.append(
            f"truncated: the {count} program headers at {offset:#x} end past the end of the "
            f"file ({size} bytes); segments are not shown"
        )
        return None
    result = []
    with _elftools_errors("program headers", offset):
        for segment in elf.iter_segments():
            h = segment.header
            p_type = h["p_type"]
            p_type = p_type.removeprefix("PT_") if isinstance(p_type, str) else f"{p_type:#x}"
            result.append(
                (p_type, h["p_offset"], h["p_vaddr"], h["p_paddr"], h["p_filesz"],
                 h["p_memsz"], h["p_flags"], h["p_align"])
            )  # fmt: skip
    return result


def _section_headers(elf, header, size: int, warnings: list[str]) -> tuple[list | None, bool]:
    offset, entsize = header["e_shoff"], header["e_shentsize"]
    if offset == 0:
        warnings.append("no section headers (e_shoff = 0): only segments are shown")
        return None, True
    with _elftools_errors("e_shnum", offset):
        count = (header["e_shnum"] or 1) if offset + entsize > size else elf.num_sections()
    if offset + count * entsize > size:
        warnings.append(
            f"truncated: the section header table ({count} x {entsize} bytes at {offset:#x}) "
            f"ends past the end of the file ({size} bytes); sections and symbols are not shown"
        )
        return None, True
    names_ok = True
    strndx = header["e_shstrndx"]
    with _elftools_errors("section headers", offset):
        if isinstance(strndx, int) and 0 < strndx < count:
            strtab = elf._get_section_header(strndx)
            if strtab["sh_offset"] + strtab["sh_size"] > size:
                names_ok = False
        else:
            names_ok = strndx == 0 and count == 0
        sections = []
        for index in range(count):
            h = elf._get_section_header(index)
            name = ""
            if names_ok:
                name = elf._get_section_name(h)
            sh_type = h["sh_type"]
            sh_type = sh_type.removeprefix("SHT_") if isinstance(sh_type, str) else f"{sh_type:#x}"
            sh_type = _READELF_TYPES.get(sh_type, sh_type)
            truncated = sh_type not in ("NOBITS", "NULL") and h["sh_offset"] + h["sh_size"] > size
            sections.append(
                Section(
                    index=index,
                    name=name,
                    type=sh_type,
                    flags=h["sh_flags"],
                    address=h["sh_addr"],
                    load_address=h["sh_addr"],
                    size=h["sh_size"],
                    offset=h["sh_offset"],
                    align=h["sh_addralign"],
                    truncated=truncated,
                )
            )
    return sections, names_ok


def _in_segment(section: Section, p_offset, p_vaddr, p_filesz, p_memsz, p_type) -> bool:
    """readelf's rule (ELF_SECTION_IN_SEGMENT, strict): file bytes and run addresses inside."""
    if section.flags & SHF_TLS and p_type != "TLS":
        return False
    if section.has_contents:
        if section.offset < p_offset:
            return False
        if section.size == 0:
            if section.offset - p_offset >= max(p_filesz, 1):
                return False
        elif section.offset + section.size > p_offset + p_filesz:
            return False
    if section.alloc:
        if section.address < p_vaddr:
            return False
        if section.size == 0:
            if section.address - p_vaddr >= max(p_memsz, 1):
                return False
        elif section.address + section.size > p_vaddr + p_memsz:
            return False
    elif not section.has_contents:
        return False
    return True


def _with_load_address(section: Section, segments: list[tuple]) -> Section:
    if not section.alloc or section.index == 0:
        return section
    for p_type, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, _flags, _align in segments:
        if p_type != "LOAD":
            continue
        if section.has_contents and section.size:
            if p_offset <= section.offset and section.offset + section.size <= p_offset + p_filesz:
                return _replace_lma(section, p_paddr + section.offset - p_offset)
        elif p_vaddr <= section.address < p_vaddr + max(p_memsz, 1):
            return _replace_lma(section, p_paddr + section.address - p_vaddr)
    return section


def _replace_lma(section: Section, lma: int) -> Section:
    from dataclasses import replace

    return replace(section, load_address=lma)


def _symbols(elf, sections: list[Section], size: int, warnings: list[str]):
    from elftools.elf.sections import SymbolTableSection

    tables = [s for s in sections if s.type == "SYMTAB"]
    if not tables:
        return [], False
    table_header = tables[0]
    if table_header.truncated:
        warnings.append(
            f"truncated: the symbol table at {table_header.offset:#x} reaches past the end "
            "of the file; symbols are not shown"
        )
        return [], True
    symbols = []
    with _elftools_errors(table_header.name or "symbol table", table_header.offset):
        table = elf.get_section(table_header.index)
        if not isinstance(table, SymbolTableSection):
            return [], False
        strtab_index = table["sh_link"]
        if not (0 < strtab_index < len(sections)) or sections[strtab_index].truncated:
            warnings.append("the symbol name table is unreadable: symbols are not shown")
            return [], True
        for symbol in table.iter_symbols():
            info = symbol["st_info"]
            shndx = symbol["st_shndx"]
            if isinstance(shndx, int):
                section_index: int | str = shndx
                section = sections[shndx].name if shndx < len(sections) else None
            else:
                section_index = {"SHN_ABS": "ABS", "SHN_UNDEF": "UND", "SHN_COMMON": "COM"}.get(
                    shndx, str(shndx)
                )
                section = None
            kind = info["type"]
            bind = info["bind"]
            name = symbol.name
            if not name and kind == "STT_SECTION" and section:
                name = section  # as readelf shows section symbols
            symbols.append(
                Symbol(
                    name=name,
                    value=symbol["st_value"],
                    size=symbol["st_size"],
                    type=kind.removeprefix("STT_") if isinstance(kind, str) else str(kind),
                    bind=bind.removeprefix("STB_") if isinstance(bind, str) else str(bind),
                    section_index=section_index,
                    section=section,
                )
            )
    return symbols, True


def _segment_warnings(image: ElfImage) -> None:
    """Loadable sections that no PT_LOAD maps at their run address (ld's "can't be
    allocated in segment"): loaders that follow program headers put their bytes at the
    load address only, so startup code must copy them. Sections the image's own copy table
    copies (etu's runner builds list .data, .sram.data and .rodata there) are fine."""
    loads = [s for s in image.segments if s.type == "LOAD"]
    if not loads:
        return
    misplaced = [
        s
        for s in image.sections
        if s.alloc and s.has_contents and s.size and not any(s.name in p.sections for p in loads)
    ]
    copied = _startup_copies(image)
    for section in misplaced:
        if _copied(section, copied):
            continue  # the reset handler copies it (etu's runner builds)
        if section.load_address != section.address:
            image.warnings.append(
                f"section {section.name} ({section.size} bytes) runs at {section.address:#x} "
                f'but no PT_LOAD maps that address (ld: "can\'t be allocated in segment"); '
                f"its bytes load at {section.load_address:#x} and the startup code must copy them"
            )
        else:
            image.warnings.append(
                f"section {section.name} ({section.size} bytes) at {section.address:#x} is in "
                "no PT_LOAD segment: a loader that follows program headers will not load it"
            )


COPY_TABLE_ENTRY = 12  # CMSIS __copy_table_t: source, destination, length in 32-bit words
COPY_TABLE_MAX = 64  # entries read at most (a real table has a handful)


def _startup_copies(image: ElfImage) -> list[tuple[int, int, int]]:
    """(source, destination, bytes) of each entry of the CMSIS startup copy table
    (``__copy_table_start__`` .. ``__copy_table_end__``) that the reset handler walks;
    empty when the image has none or it is unreadable."""
    start, end = image.symbol("__copy_table_start__"), image.symbol("__copy_table_end__")
    if start is None or end is None or image.elf_class != 32:
        return []
    size = end.value - start.value
    if size <= 0 or size % COPY_TABLE_ENTRY or size > COPY_TABLE_ENTRY * COPY_TABLE_MAX:
        return []
    raw = image.read_bytes(start.value, size)
    if raw is None:
        return []
    fmt = ("<" if image.little_endian else ">") + "III"
    return [(src, dest, words * 4) for src, dest, words in struct.iter_unpack(fmt, raw)]


def _copied(section: Section, copies: list[tuple[int, int, int]]) -> bool:
    """The copy table moves all of ``section`` from its load to its run address."""
    return any(
        dest <= section.address
        and section.end <= dest + size
        and src - dest == section.load_address - section.address
        for src, dest, size in copies
    )
