"""Stale-cache guard of the Numba kernel modules.

Numba's on-disk cache (``@njit(cache=True)``) checks a cached function against the source of
its own file only. A kernel that calls a jitted function of another module has that function
compiled into it, so when the other module changes, the cache keeps serving the old code:
silently wrong numbers until someone deletes ``__pycache__``.

Every module with ``cache=True`` kernels calls, at import (after importing the kernel modules
whose functions it calls)::

    from ppdp.engine.kernels.cache import guard
    guard(__file__, depends_on=[_kernels])

``guard`` hashes (sha256) the module's own source and that of every module in ``depends_on``,
and of their own dependencies as they declared them to ``guard`` (a dependency is imported, so
guarded, first): the stamp covers every source compiled into the module's kernels. When the
stamp stored next to the module's cache files differs, those cache files are removed and Numba
compiles afresh. It only ever removes the cache files of the module that calls it.

A read-only install (no writable cache directory) is left alone: any ``OSError`` and the guard
does nothing (Numba then compiles in memory, or uses its user-wide cache directory, which the
guard looks at too, since it asks Numba's own cache locators where the files go).

Limit: the stamp is written at import, so a process still running code imported before an edit
can write cache files after a newer process stamped the edited sources, and they would pass.
Numba has no such gap for a function's own file (its index keeps the source hash read at
import). Only while editing kernels with an older run going: clear ``__pycache__`` after it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

STAMP_SUFFIX = "deps-sha256"

# Guarded module file -> the source files its stamp covers (itself and its dependencies,
# transitively). A dependency guarded earlier contributes its own list.
_COVERS: dict[str, tuple[str, ...]] = {}
# Source file -> ((mtime_ns, size), sha256 hex): each source is hashed once per process.
_DIGESTS: dict[str, tuple[tuple[int, int], str]] = {}


def _file_of(dep: ModuleType | str | os.PathLike) -> str:
    path = dep.__file__ if isinstance(dep, ModuleType) else dep
    if path is None:
        raise ValueError(f"{dep!r} has no source file")
    return os.path.realpath(os.fspath(path))


def _digest(path: str) -> str:
    st = os.stat(path)
    key = (st.st_mtime_ns, st.st_size)
    hit = _DIGESTS.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    _DIGESTS[path] = (key, digest)
    return digest


def cache_dir(module_file: str | os.PathLike) -> Path:
    """The directory Numba writes ``module_file``'s cache to: the first of Numba's own cache
    locators that accepts the file (``NUMBA_CACHE_DIR``, then ``__pycache__`` next to the file
    when writable, then the user-wide cache), or ``__pycache__`` when Numba's internals are not
    what this expects."""
    path = os.fspath(module_file)
    try:
        from numba.core import caching

        impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)  # _CacheImpl in older Numba
        for locator_class in getattr(impl, "_locator_classes", ()):
            # The locators read only the function's first line number (for file names).
            locator = locator_class.from_function(cache_dir, path)
            if locator is not None:
                return Path(locator.get_cache_path())
    except Exception:  # noqa: BLE001 - a Numba internal changed: fall back to Numba's default
        pass
    return Path(path).parent / "__pycache__"


def covered_sources(module_file: str | os.PathLike) -> tuple[str, ...]:
    """The source files the stamp of a guarded module covers (empty when it was not guarded)."""
    return _COVERS.get(_file_of(module_file), ())


def guard(module_file: str | os.PathLike, depends_on: Iterable[ModuleType | str | os.PathLike] = ()) -> bool:
    """Remove the Numba cache files of ``module_file`` when its source, or that of a module in
    ``depends_on`` (modules or files; their own guarded dependencies are added), changed since
    the cache was written. Returns whether files were removed; never raises ``OSError``."""
    own = _file_of(module_file)
    covers: list[str] = [own]
    for dep in depends_on:
        for path in (_file_of(dep), *_COVERS.get(_file_of(dep), ())):
            if path not in covers:
                covers.append(path)
    _COVERS[own] = tuple(covers)
    try:
        h = hashlib.sha256()
        for path in covers:  # own first, then in declaration order: a stable stamp
            h.update(f"{Path(path).name}\0{_digest(path)}\n".encode())
        digest = h.hexdigest()
        where = cache_dir(own)
        stem = Path(own).stem
        stamp = where / f"{stem}.{STAMP_SUFFIX}"
        if stamp.is_file() and stamp.read_text() == digest:
            return False
        dropped = False
        for f in where.glob(f"{stem}.*.nb[ic]"):
            f.unlink(missing_ok=True)
            dropped = True
        where.mkdir(parents=True, exist_ok=True)
        tmp = where / f"{stem}.{STAMP_SUFFIX}.{os.getpid()}.tmp"
        tmp.write_text(digest)
        os.replace(tmp, stamp)  # atomic: a concurrent import reads the old stamp or the new one
        return dropped
    except OSError:  # read-only install: Numba then compiles in memory anyway
        return False
