"""Which upstream source files hold the kernels a program needs, read the way upstream's
build reads them.

Three facts from the ExecuTorch tree, none guessed from C++ syntax:
- a kernel library's YAML (``functions.yaml``, ``quantized.yaml``, the Cortex-M
  ``operators.yaml``) maps each operator to its kernel function;
- the library's build lists name the files it is built from: upstream's CMake globs
  ``kernels/portable/cpu`` (its ``util/`` is a library of its own), the Buck lists in
  ``shim_et/xplat/executorch/build/build_variables.bzl`` (``PORTABLE_KERNELS_SRCS``,
  ``QUANTIZED_KERNELS_SRCS``; upstream's CMake loads that file too) and the Cortex-M CMake
  file its list;
- upstream names the file of operator ``X`` ``op_X.cpp`` (its per-operator Buck targets).
A kernel is placed in a file of the build list when that file is named for its operator (or
is the only one) and names the kernel function, whether it defines it in plain C++ or hands
it to a ``DEFINE_…`` macro. Files of the build list that define no operator (the portable
``pattern/`` sources the unary macros expand into calls of) are the library's helpers and go
with every selection from it. A kernel that cannot be placed so is not guessed: the whole
library is built for that program (slower, never wrong).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

BUILD_VARIABLES = "shim_et/xplat/executorch/build/build_variables.bzl"


class KernelLookupError(RuntimeError):
    """An operator no kernel library of the source tree defines; one line."""


@dataclass(frozen=True)
class KernelLibrary:
    """One upstream kernel library: where its YAML and its build list are."""

    name: str
    yaml: str  # relative to the ExecuTorch root
    default_namespace: str  # of ``- op:`` entries
    build_variable: str | None = None  # a list in build_variables.bzl ...
    cmake_list: str | None = None  # ... or the CMake file listing its sources
    cmake_folder: str = ""  # what ${CMAKE_CURRENT_SOURCE_DIR} is in that file
    cmake_glob: str | None = None  # a folder upstream's CMake globs for *.cpp ...
    glob_excludes: tuple[str, ...] = ()  # ... less these subfolders (libraries of their own)


# fmt: off
LIBRARIES = (
    KernelLibrary("portable", "kernels/portable/functions.yaml", "aten", "PORTABLE_KERNELS_SRCS",
                  cmake_glob="kernels/portable/cpu", glob_excludes=("util", "test", "codegen")),
    KernelLibrary("quantized", "kernels/quantized/quantized.yaml", "quantized_decomposed",
                  "QUANTIZED_KERNELS_SRCS"),
    KernelLibrary("cortex_m", "backends/cortex_m/ops/operators.yaml", "cortex_m",
                  cmake_list="backends/cortex_m/CMakeLists.txt", cmake_folder="backends/cortex_m"),
)
# fmt: on


@dataclass
class LibrarySelection:
    """The sources of one library a program needs (paths relative to the root)."""

    library: str
    kernels: dict[str, str] = field(default_factory=dict)  # operator → its file
    helpers: list[str] = field(default_factory=list)
    whole: bool = False  # some kernel could not be placed: every source of the library
    unplaced: list[str] = field(default_factory=list)
    all_sources: list[str] = field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        if self.whole:
            return list(self.all_sources)
        return sorted({*self.kernels.values(), *self.helpers}) if self.kernels else []


@dataclass
class KernelIndex:
    """Every operator of every kernel library in one source tree."""

    root: Path
    operators: dict[str, tuple[str, str]]  # "ns::name.overload" → (library, kernel function)
    sources: dict[str, list[str]]  # library → its build list (files that exist)
    missing_lists: dict[str, str]  # library → why its build list could not be read
    _texts: dict[str, str] = field(default_factory=dict, repr=False)  # file → code sans comments

    def library_of(self, op: str) -> str | None:
        found = self.operators.get(op)
        return found[0] if found else None

    def place(self, op: str) -> str | None:
        """The one file of ``op``'s library that defines its kernel, or None if uncertain."""
        library, function = self.operators[op]
        files = [f for f in self.sources.get(library, []) if _is_operator_file(f)]
        if not files:
            return None
        stem = op.split("::", 1)[-1].split(".", 1)[0]
        word = re.compile(rf"\b{re.escape(function)}\b")
        named = [f for f in files if Path(f).stem == f"op_{stem}"]
        for candidates in (named, files):
            hits = [f for f in candidates if word.search(self._code(f))]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                return None
        return None

    def helpers(self, library: str) -> list[str]:
        return [f for f in self.sources.get(library, []) if not _is_operator_file(f)]

    def _code(self, relative: str) -> str:
        if relative not in self._texts:
            text = (self.root / relative).read_text(errors="replace")
            self._texts[relative] = _without_comments(text)
        return self._texts[relative]


def _is_operator_file(relative: str) -> bool:
    return Path(relative).name.startswith("op_")


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _without_comments(text: str) -> str:
    return _COMMENT.sub(" ", text)


def load_index(root: Path) -> KernelIndex:
    import yaml

    operators: dict[str, tuple[str, str]] = {}
    sources: dict[str, list[str]] = {}
    missing: dict[str, str] = {}
    variables = _build_variables(root / BUILD_VARIABLES)
    for library in LIBRARIES:
        path = root / library.yaml
        if not path.is_file():
            missing[library.name] = f"{library.yaml} not in the source tree"
            continue
        for entry in yaml.safe_load(path.read_text()) or []:
            name = _entry_operator(entry, library.default_namespace)
            kernels = entry.get("kernels") or [] if isinstance(entry, dict) else []
            if name and kernels and isinstance(kernels[0], dict):
                function = str(kernels[0].get("kernel_name", "")).rsplit("::", 1)[-1]
                operators.setdefault(name, (library.name, function))
        listed = [
            *(variables.get(library.build_variable or "") or []),
            *_cmake_sources(root, library),
            *_cmake_glob(root, library),
        ]
        if not listed:
            missing[library.name] = "no build list names its sources"
            continue
        sources[library.name] = sorted({f for f in listed if (root / f).is_file()})
    return KernelIndex(root, operators, sources, missing)


def _entry_operator(entry: object, namespace: str) -> str | None:
    if not isinstance(entry, dict):
        return None
    if "op" in entry:
        return f"{namespace}::{entry['op']}"
    func = str(entry.get("func", ""))
    head = func.split("(", 1)[0].strip()
    if not head:
        return None
    return head if "::" in head else f"{namespace}::{head}"


def _build_variables(path: Path) -> dict[str, list[str]]:
    """The string lists of a Starlark build-variables file, evaluated without running it:
    literals, ``+`` and ``[prefix + x for x in LIST]`` (all upstream's lists use)."""
    if not path.is_file():
        return {}
    try:
        tree = ast.parse(path.read_text())
    except SyntaxError:
        return {}
    known: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                value = _evaluate(node.value, known)
                if isinstance(value, list):
                    known[target.id] = value
    return known


def _evaluate(node: ast.AST, known: dict[str, list[str]], bound: dict | None = None):
    bound = bound or {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return bound.get(node.id, known.get(node.id))
    if isinstance(node, ast.List):
        items = [_evaluate(item, known, bound) for item in node.elts]
        return items if all(isinstance(i, str) for i in items) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _evaluate(node.left, known, bound), _evaluate(node.right, known, bound)
        if type(left) is type(right) and left is not None:
            return left + right
        return None
    if isinstance(node, ast.ListComp) and len(node.generators) == 1:
        gen = node.generators[0]
        items = _evaluate(gen.iter, known, bound)
        if gen.ifs or not isinstance(gen.target, ast.Name) or not isinstance(items, list):
            return None
        out = [_evaluate(node.elt, known, {**bound, gen.target.id: x}) for x in items]
        return out if all(isinstance(i, str) for i in out) else None
    return None


_CMAKE_SOURCE = re.compile(r"\$\{CMAKE_CURRENT_SOURCE_DIR\}/([\w/.-]+\.cpp)")


def _cmake_sources(root: Path, library: KernelLibrary) -> list[str]:
    if library.cmake_list is None or not (root / library.cmake_list).is_file():
        return []
    found = _CMAKE_SOURCE.findall((root / library.cmake_list).read_text())
    return [f"{library.cmake_folder}/{name}" for name in dict.fromkeys(found)]


def _cmake_glob(root: Path, library: KernelLibrary) -> list[str]:
    if library.cmake_glob is None:
        return []
    folder = root / library.cmake_glob
    return [
        path.relative_to(root).as_posix()
        for path in sorted(folder.rglob("*.cpp"))
        if not set(path.relative_to(folder).parts[:-1]) & set(library.glob_excludes)
    ]


def select_kernels(
    index: KernelIndex, ops: list[str]
) -> tuple[dict[str, LibrarySelection], list[str]]:
    """Per library, the sources of ``ops``; and the operators no library defines."""
    selections: dict[str, LibrarySelection] = {}
    unknown: list[str] = []
    for op in ops:
        library = index.library_of(op)
        if library is None:
            unknown.append(op)
            continue
        selection = selections.setdefault(
            library,
            LibrarySelection(library, helpers=index.helpers(library),
                             all_sources=list(index.sources.get(library, []))),
        )  # fmt: skip
        placed = index.place(op) if library in index.sources else None
        if placed is None:
            selection.whole = True
            selection.unplaced.append(op)
        else:
            selection.kernels[op] = placed
    return selections, unknown
