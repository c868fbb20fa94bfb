"""Whether an output folder overlaps an input: the same file, or one inside the other, however each is reached.

Path text cannot tell: a symlink, a hard link or a bind mount (a container's `-v`) gives one file
several paths. Two facts can: a file's identity (device and inode), compared with the identities
of the other path's ancestors; and where a path lies in its file system (the mount's root in
/proc/self/mountinfo joined with the rest of the path), which a bind mount of a subfolder cannot
hide. Without /proc, identities alone are compared.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipebench.errors import UsageError

MOUNTINFO = "/proc/self/mountinfo"
_ESCAPE = re.compile(rb"\\([0-7]{3})")  # mountinfo writes space, tab, newline and backslash as octal


@dataclass(frozen=True)
class Mount:
    point: str  # where it is mounted in this process's view
    root: str  # which folder of its file system it shows
    device: str  # major:minor of its file system


@dataclass(frozen=True)
class _Place:
    """One path as the kernel sees it: its identity, its ancestors' identities, and where it lies in its file system."""

    identity: tuple[int, int] | None  # (device, inode); None if nothing is there yet
    ancestors: tuple[tuple[int, int] | None, ...]  # nearest first
    location: tuple[str, str] | None  # (device, path within the file system)

    def holds(self, other: _Place) -> bool:
        """Whether `other` lies strictly inside this folder."""
        if self.identity is not None and self.identity in other.ancestors:
            return True
        if self.location is None or other.location is None or self.location[0] != other.location[0]:
            return False
        return other.location[1].startswith(self.location[1].rstrip("/") + "/")


def _unescape(field: bytes) -> str:
    return os.fsdecode(_ESCAPE.sub(lambda m: bytes([int(m[1], 8)]), field))


def mounts() -> list[Mount]:
    """Give this process's mounts in the order they were made; [] where /proc is not there."""
    try:
        with open(MOUNTINFO, "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(b" ")
        if len(fields) > 4:
            found.append(Mount(_unescape(fields[4]), _unescape(fields[3]), fields[2].decode("ascii", "replace")))
    return found


def _identity(path: str) -> tuple[int, int] | None:
    """Give the (device, inode) at `path`, or None if nothing is there."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _place(path: str | os.PathLike, known: list[Mount]) -> _Place:
    """Give where `path` is as the kernel sees it (symlinks followed), among the `known` mounts."""
    real = os.path.realpath(path)
    ancestors = []
    folder = real
    while folder != (parent := os.path.dirname(folder)):
        folder = parent
        ancestors.append(_identity(folder))
    mount = None
    for candidate in known:  # the deepest mount point holding the path; a later mount hides an earlier one
        if _inside(real, candidate.point) and (mount is None or len(candidate.point) >= len(mount.point)):
            mount = candidate
    location = None
    if mount is not None:
        rest = real[len(mount.point):].strip("/")
        location = (mount.device, mount.root.rstrip("/") + "/" + rest if rest else mount.root)
    return _Place(_identity(real), tuple(ancestors), location)


def holds(folder: str | os.PathLike, path: str | os.PathLike) -> bool:
    """Give whether `path` is `folder` or lies inside it, however either is reached."""
    found = mounts()
    outer, inner = _place(folder, found), _place(path, found)
    return (outer.identity is not None and outer.identity == inner.identity) or outer.holds(inner)


def refuse_overlap(out: str | os.PathLike, inputs: Iterable[str | os.PathLike], inside_inputs: bool = False) -> None:
    """Raise UsageError when writing folder `out` would replace an input or write into one.

    The output may not be an input (a hard link of one included), hold one, or lie inside one unless
    `inside_inputs` (a report inside its run folder).
    """
    found = mounts()
    output = _place(out, found)
    for given in inputs:
        source = _place(given, found)
        if source.identity is None:
            continue  # no such input: its reader says so
        if output.identity == source.identity:
            relation = "is"
        elif output.holds(source):
            relation = "contains"
        elif not inside_inputs and source.holds(output):
            relation = "is inside"
        else:
            continue
        raise UsageError(f"output {out} {relation} the input {given}; choose an --out apart from the inputs")
