"""A user's own tf.data function, named `PATH.py:FUNCTION`, read here without TensorFlow.

`pipebench diagnose PATH.py:FUNCTION` names a function this way; importing and calling it happens in
a worker (pipebench.pipeline.user_code).
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass
from pathlib import Path

from pipebench.errors import UsageError
from pipebench.values import echo


@dataclass(frozen=True)
class Place:
    """Where something is written in the user's code."""

    file: str
    line: int

    @property
    def text(self) -> str:
        return f"{Path(self.file).name}:{self.line}"


@dataclass(frozen=True)
class FunctionRef:
    """A function in a Python file: `path` (absolute) and the function's name at its module's top level."""

    path: str
    name: str

    @property
    def text(self) -> str:
        return f"{self.path}:{self.name}"


def parse_function_ref(text: str, flag: str = "PATH.py:FUNCTION", base: Path | None = None) -> FunctionRef:
    """Give the FunctionRef `text` names, a relative path read from `base` (default: the working folder);
    UsageError (one line) when it is malformed or the file is missing."""
    path, sep, name = text.rpartition(":")
    if not sep or not path or not name:
        raise UsageError(f"{flag}: {echo(text)} is not PATH.py:FUNCTION (a Python file, a colon, a function name)")
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"{flag}: {echo(name)} is not a Python function name")
    file = Path(base or ".") / path
    shown = path if path.isprintable() and len(path) < 200 else echo(path)
    if file.suffix != ".py":
        raise UsageError(f"{shown}: not a .py file ({flag})")
    if not file.exists():
        raise UsageError(f"{shown}: no such file" + (f" (read from {Path(base).resolve()})" if base is not None
                                                    and not Path(path).is_absolute() else ""))
    if not file.is_file():
        raise UsageError(f"{shown}: not a file")
    return FunctionRef(str(file.resolve()), name)
