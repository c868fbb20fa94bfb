"""The page cache of data files: how much of them is resident (mincore), and dropping them (fadvise).

Used by the sampler (residency during a trial), the cold-read File source and the cold pass (drop
before reading). No root needed; Linux only.
"""
from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

_libc: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL:
    """Give libc with mmap / mincore / munmap typed (set up once, on first use)."""
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc = libc
    return _libc


def resident_pages(path: str | Path) -> tuple[int, int]:
    """Give (pages of `path` in the page cache, pages in the file), through mmap + mincore."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0, 0
        pages = -(-size // mmap.PAGESIZE)
        libc = _c()
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap failed: {os.strerror(ctypes.get_errno())}", str(path))
        try:
            vector = (ctypes.c_ubyte * pages)()
            if libc.mincore(address, size, vector) != 0:
                raise OSError(ctypes.get_errno(), f"mincore failed: {os.strerror(ctypes.get_errno())}", str(path))
        finally:
            libc.munmap(address, size)
        return int((np.frombuffer(vector, dtype=np.uint8) & 1).sum()), pages
    finally:
        os.close(fd)


def resident_fraction_of(paths: Iterable[str | Path]) -> float:
    resident = total = 0
    for path in paths:
        r, t = resident_pages(path)
        resident, total = resident + r, total + t
    return resident / total if total else 1.0


def resident_fraction(path: str | Path) -> float:
    """Give the share of the file's pages in the page cache; 1.0 for an empty file (nothing to read)."""
    return resident_fraction_of([path])


def drop_page_cache(paths: Iterable[str | Path]) -> None:
    """Drop the files' pages from the page cache (no root needed); dirty pages are written back
    first, since the kernel drops only clean ones."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def evict_page_cache(paths: Iterable[str | Path]) -> float:
    """Drop the files' pages from the page cache; give the share still resident.

    Pages another process has mapped stay, which is why the result is worth checking before a
    "cold" trial.
    """
    paths = list(paths)
    drop_page_cache(paths)
    return resident_fraction_of(paths)
