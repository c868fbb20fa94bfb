"""What `pipebench diagnose` is pointed at: `PATH.py:FUNCTION` and its `--set NAME=VALUE` arguments.

Parsed in the CLI process, before any worker starts (no TensorFlow here): a missing file, a name
that is no Python identifier or a value that is not a YAML scalar or list is refused in one line.
Whether the function exists and takes these arguments is known only once its module is imported,
which happens in the worker (pipebench.diagnose.load).
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.errors import UsageError
from pipebench.values import echo
from pipebench.yamlfile import parse_yaml


@dataclass(frozen=True)
class FunctionRef:
    """A function in a Python file: `path` (absolute) and the function's name at its module's top level."""

    path: str
    name: str

    @property
    def text(self) -> str:
        return f"{self.path}:{self.name}"


def parse_function_ref(text: str, flag: str = "PATH.py:FUNCTION") -> FunctionRef:
    """Give the FunctionRef `text` names; UsageError (one line) when it is malformed or the file is missing."""
    path, sep, name = text.rpartition(":")
    if not sep or not path or not name:
        raise UsageError(f"{flag}: {echo(text)} is not PATH.py:FUNCTION (a Python file, a colon, a function name)")
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"{flag}: {echo(name)} is not a Python function name")
    file = Path(path)
    shown = path if path.isprintable() and len(path) < 200 else echo(path)
    if file.suffix != ".py":
        raise UsageError(f"{shown}: not a .py file ({flag})")
    if not file.exists():
        raise UsageError(f"{shown}: no such file")
    if not file.is_file():
        raise UsageError(f"{shown}: not a file")
    return FunctionRef(str(file.resolve()), name)


def parse_settings(items: list[str]) -> dict[str, Any]:
    """Give the keyword arguments `--set NAME=VALUE` items make: each VALUE a YAML scalar or list.

    A name given twice, a name that is no Python identifier, or a mapping value is refused in one line.
    """
    found: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep:
            raise UsageError(f"--set {echo(item)}: not NAME=VALUE")
        if not name.isidentifier() or keyword.iskeyword(name):
            raise UsageError(f"--set {echo(item)}: {echo(name)} is not a Python argument name")
        if name in found:
            raise UsageError(f"--set {name}: given twice")
        value = parse_yaml(text, f"--set {name}") if text.strip() else ""
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)):
            raise UsageError(f"--set {name}: a YAML scalar or a list of scalars, not {echo(text)}")
        found[name] = value
    return found
