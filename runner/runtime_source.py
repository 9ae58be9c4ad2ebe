"""Where the ExecuTorch runtime source (and the Ethos-U driver, CMSIS) comes from.

Order: ``ETU_EXECUTORCH_SRC`` (a checkout or a tarball), the workspace config
(``executorch_src`` in ``etu.toml`` or the user's config, via runner/config.py), a source
mirror (a folder of the unmodified upstream archives: ``ETU_SOURCE_MIRROR``, else
``shared/vendor/`` in or beside etu's own source checkout, where this project's machines,
which cannot reach GitHub, keep them; see :func:`source_mirror`), then a download of the
pinned upstream commit when the machine is online (``ETU_NO_DOWNLOAD=1`` skips it). A
tarball is unpacked once into the cache (``<cache>/src/<sha256 prefix>/``): ExecuTorch's top
CMakeLists.txt refuses a folder not named ``executorch``. The Ethos-U core driver and
CMSIS-Core come from ``ETU_ETHOSU_DRIVER_SRC`` / ``ETU_CMSIS_SRC``, else from archives
beside the ExecuTorch tarball, else from the mirror (``ethos-u-core-driver-*.tar.gz``,
``cmsis-core-*.tar.gz``).

One rule for every caller (``make run``, ``make test``, ``etu serve``, a shell): ``.ci/run``
exporting the three variables finds the same archives.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PINNED_COMMIT = "cff6f4dd32e630945b7188512c1f2b4f102b05ad"
PINNED_URL = f"https://github.com/pytorch/executorch/archive/{PINNED_COMMIT}.tar.gz"
DOWNLOAD_TIMEOUT = 30
ENV_SOURCE = "ETU_EXECUTORCH_SRC"
ENV_DRIVER = "ETU_ETHOSU_DRIVER_SRC"
ENV_CMSIS = "ETU_CMSIS_SRC"
ENV_CMSIS_NN = "ETU_CMSIS_NN_SRC"  # CMSIS-NN at the Cortex-M backend's CMSIS_NN_VERSION
ENV_CACHE = "ETU_BUILD_CACHE"
ENV_MIRROR = "ETU_SOURCE_MIRROR"
# The archive names in a mirror (shared/vendor/ holds them under these names).
MIRROR_EXECUTORCH = "executorch-runtime-src-*.tar.gz"
MIRROR_DRIVER = "ethos-u-core-driver-*.tar.gz"
MIRROR_CMSIS = "cmsis-core-*.tar.gz"
# etu's own source checkout (runner/ sits in it); an installed wheel has no pyproject.toml
# beside its packages, so only a checkout has a default mirror.
CHECKOUT = Path(__file__).resolve().parent.parent


class SourceError(RuntimeError):
    """No usable source; the message is one line (status 2 for the CLI)."""


@dataclass(frozen=True)
class RuntimeSource:
    root: Path  # the folder named executorch
    origin: str  # "env", "workspace", "mirror" or "download"
    given: str  # what the user pointed at
    commit: str  # the upstream commit (or a content hash when unknown)


def cache_root() -> Path:
    """The build cache: ``ETU_BUILD_CACHE`` or the platform's user cache for etu."""
    override = os.environ.get(ENV_CACHE)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("etu"))


def no_source_message() -> str:
    return (
        "no ExecuTorch runtime source: set ETU_EXECUTORCH_SRC to a checkout or a source "
        "tarball, or set executorch_src in the workspace's etu.toml (or etu config), or "
        f"set {ENV_MIRROR} to a folder holding {MIRROR_EXECUTORCH} (with "
        f"{MIRROR_DRIVER} and {MIRROR_CMSIS} for Ethos-U builds), or "
        f"connect this machine so etu can download the pinned commit {PINNED_COMMIT[:8]} "
        "from github.com/pytorch/executorch"
    )


def source_mirror(checkout: Path | None = None) -> Path | None:
    """The folder of upstream source archives: ``ETU_SOURCE_MIRROR`` when set (an empty
    value: none), else ``shared/vendor/`` in etu's source checkout or in the folder above it
    (``../shared/vendor``, the layout ``.ci/run`` reads). Never the working folder."""
    given = os.environ.get(ENV_MIRROR)
    if given is not None:
        if not given:
            return None
        folder = Path(given).expanduser()
        if not folder.is_dir():
            raise SourceError(f"{folder}: no such folder ({ENV_MIRROR})")
        return folder
    root = CHECKOUT if checkout is None else Path(checkout)
    if not (root / "pyproject.toml").is_file():  # an installed etu: no checkout around it
        return None
    for base in (root, root.parent):
        folder = base / "shared" / "vendor"
        if folder.is_dir():
            return folder
    return None


def mirror_archive(pattern: str, mirror: Path | None = None) -> Path | None:
    """The newest-named archive matching ``pattern`` in the source mirror, if any."""
    folder = source_mirror() if mirror is None else mirror
    if folder is None:
        return None
    found = sorted(p for p in folder.glob(pattern) if p.is_file())
    return found[-1] if found else None


def find_executorch(workspace: Path | None = None, *, online: bool = True) -> RuntimeSource:
    """The runtime source by the documented order, or SourceError naming the three ways."""
    given = os.environ.get(ENV_SOURCE)
    if given:
        return _from_path(Path(given).expanduser(), "env", given)
    configured, ignored = _workspace_setting(workspace or Path.cwd(), "executorch_src")
    if configured:
        return _from_path(configured, "workspace", str(configured))
    if ignored:  # an untrusted workspace file chose the source: say so, build nothing of it
        raise SourceError(ignored)
    mirrored = mirror_archive(MIRROR_EXECUTORCH)
    if mirrored is not None:
        return _from_path(mirrored, "mirror", str(mirrored))
    if online and not os.environ.get("ETU_NO_DOWNLOAD"):
        try:
            return download_pinned()
        except SourceError as error:
            raise SourceError(f"{no_source_message()} ({error})") from None
    raise SourceError(no_source_message())


def download_pinned() -> RuntimeSource:
    """Fetch the pinned commit's tarball from GitHub into the cache (urllib, no shell)."""
    target = cache_root() / "downloads" / f"executorch-{PINNED_COMMIT[:8]}.tar.gz"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        try:
            with (
                urllib.request.urlopen(PINNED_URL, timeout=DOWNLOAD_TIMEOUT) as response,
                open(partial, "wb") as handle,
            ):
                shutil.copyfileobj(response, handle)
        except (urllib.error.URLError, OSError, TimeoutError) as error:
            partial.unlink(missing_ok=True)
            reason = getattr(error, "reason", error)
            raise SourceError(f"download of {PINNED_URL} failed: {reason}") from None
        partial.replace(target)
    return _from_path(target, "download", PINNED_URL)


def find_sibling(source: RuntimeSource, env: str, pattern: str, marker: str) -> Path | None:
    """A companion source (driver, CMSIS): its env variable, else an archive beside the
    ExecuTorch tarball, else one in the source mirror. Returns the unpacked folder holding
    ``marker``."""
    given = os.environ.get(env)
    if given:
        path = Path(given).expanduser()
    else:
        folder = Path(source.given).expanduser().parent
        matches = sorted(folder.glob(pattern)) if Path(source.given).is_file() else []
        found = matches[-1] if matches else mirror_archive(pattern)
        if found is None:
            return None
        path = found
    if path.is_dir():
        found = _find_marker(path, marker)
        if found is None:
            raise SourceError(f"{path}: no {marker} inside")
        return found
    if not path.is_file():
        raise SourceError(f"{path}: no such file or folder ({env})")
    unpacked = _unpack(path)
    found = _find_marker(unpacked, marker)
    if found is None:
        raise SourceError(f"{path}: no {marker} inside the archive")
    return found


def _find_marker(folder: Path, marker: str) -> Path | None:
    if (folder / marker).exists():
        return folder
    for child in sorted(folder.iterdir()):
        if child.is_dir() and (child / marker).exists():
            return child
    return None


def _workspace_setting(workspace: Path, key: str) -> tuple[Path | None, str | None]:
    """A path setting from the workspace's etu.toml / the user's config file, and the
    warning when an untrusted workspace file set it (then ignored)."""
    from etu.runner.config import ConfigError, load_settings

    try:
        settings = load_settings(Path(workspace), env={})
    except ConfigError as error:
        raise SourceError(str(error)) from None
    value = getattr(settings, key, None)
    warning = next((w for w in settings.warnings if f": {key} = " in w), None)
    return (Path(value) if value else None), warning


def _from_path(path: Path, origin: str, given: str) -> RuntimeSource:
    if path.is_dir():
        root = path if (path / "CMakeLists.txt").is_file() else path / "executorch"
        if not (root / "runtime").is_dir() or not (root / "CMakeLists.txt").is_file():
            raise SourceError(
                f"{path}: not an ExecuTorch source tree (no runtime/, CMakeLists.txt)"
            )
        if root.name != "executorch":
            raise SourceError(
                f"{path}: the source folder must be named 'executorch' "
                "(ExecuTorch's CMakeLists.txt refuses another name)"
            )
        return RuntimeSource(root.resolve(), origin, given, _commit_of(root))
    if path.is_file():

        def name_the_tree(unpacked: Path) -> None:
            """GitHub archives unpack as executorch-<sha>/; CMake wants executorch/."""
            if not (unpacked / "executorch").is_dir():
                candidates = [c for c in unpacked.iterdir() if (c / "runtime").is_dir()]
                if len(candidates) == 1:
                    candidates[0].rename(unpacked / "executorch")

        root = _unpack(path, name_the_tree) / "executorch"
        if not root.is_dir():
            raise SourceError(f"{path}: the archive holds no ExecuTorch source tree")
        return RuntimeSource(root, origin, given, _archive_commit(path))
    raise SourceError(
        f"{path}: no such file or folder ({ENV_SOURCE if origin == 'env' else origin})"
    )


def _unpack(archive: Path, arrange: Callable[[Path], None] | None = None) -> Path:
    """Unpack once into the cache, keyed by the archive's content; ``arrange`` tidies the
    unpacked folder before it is marked finished. Unpacks of one archive take turns (a file
    lock): a second build waits for the first's tree rather than replacing it while the first
    compiles from it (seen with three test workers on a fresh cache). A folder left unmarked
    by an interrupted unpack is redone."""
    digest = _sha256(archive)[:16]
    folder = cache_root() / "src" / digest
    if (folder / ".etu-unpacked").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / ".etu-unpacked").is_file():  # another process finished it meanwhile
            return folder
        work = Path(tempfile.mkdtemp(prefix=f"{digest}-", dir=folder.parent))
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(work, filter="data")  # no absolute paths, no links out
            if arrange is not None:
                arrange(work)
            (work / ".etu-unpacked").write_text(str(archive) + "\n")
            if folder.exists():  # unmarked: an interrupted unpack's
                shutil.rmtree(folder)
            work.rename(folder)
        except (tarfile.TarError, OSError) as error:
            shutil.rmtree(work, ignore_errors=True)
            raise SourceError(f"{archive}: cannot unpack ({error})") from None
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return folder


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _archive_commit(path: Path) -> str:
    """The commit a tarball's name states (…-<hex>.tar.gz), else its content hash."""
    stem = path.name.split(".tar")[0]
    tail = stem.rsplit("-", 1)[-1]
    if len(tail) >= 7 and all(c in "0123456789abcdef" for c in tail.lower()):
        return tail.lower()
    return "sha256-" + _sha256(path)[:12]


def _commit_of(root: Path) -> str:
    """A checkout's HEAD commit from .git (no git process), else a hash of version.txt."""
    head = root / ".git" / "HEAD"
    try:
        text = head.read_text().strip()
        if text.startswith("ref: "):
            ref = root / ".git" / text[5:]
            if ref.is_file():
                return ref.read_text().strip()
        elif text:
            return text
    except OSError:
        pass
    version = root / "version.txt"
    seed = version.read_bytes() if version.is_file() else str(root).encode()
    return "tree-" + hashlib.sha256(seed + str(root).encode()).hexdigest()[:12]
