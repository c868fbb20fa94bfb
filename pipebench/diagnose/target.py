"""What `pipebench diagnose` passes the user's function: its `--set NAME=VALUE` arguments.

Parsed in the CLI process, before any worker starts (no TensorFlow here): a name that is no Python
identifier or a value that is not a YAML scalar or list is refused in one line. `PATH.py:FUNCTION`
itself is pipebench.pipeline.function's to parse (an experiment's `pipelines.functions` name
functions the same way); whether the function exists and takes these arguments is known once its
module is imported, in the worker (pipebench.pipeline.user_code).
"""
from __future__ import annotations

import keyword
import os
import re
from pathlib import Path
from typing import Any

from pipebench.errors import ConfigError, UsageError
from pipebench.values import echo
from pipebench.yamlfile import parse_yaml


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
        try:
            value = parse_yaml(text, f"--set {name}") if text.strip() else ""
        except ConfigError as err:  # a --set value is an argument, not an experiment file: a usage error
            raise UsageError(str(err)) from None
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)):
            raise UsageError(f"--set {name}: a YAML scalar or a list of scalars, not {echo(text)}")
        found[name] = value
    return found


_WILDCARD = re.compile(r"[*?[]")


def named_paths(kwargs: dict[str, Any]) -> tuple[list[Path], list[Path]]:
    """Give the existing files and folders the arguments name, as (paths, pattern folders): a text value (or list
    item) that is a path, read from the working folder as the worker reads it (`~` expanded), and for a pattern
    (`data/part-*`) what it matches; the folder before its first wildcard is a pattern folder (an output may lie
    in it, but not replace or hold it)."""
    import glob

    paths: list[Path] = []
    folders: list[Path] = []

    def visit(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                visit(item)
            return
        if not isinstance(value, str) or not value or "\0" in value:
            return
        text = os.path.expanduser(value)
        wildcard = _WILDCARD.search(text)
        if wildcard is None:
            if os.path.lexists(text):
                paths.append(Path(text))
            return
        folder = os.path.dirname(text[:wildcard.start()]) or "."
        if os.path.isdir(folder):
            folders.append(Path(folder))
        paths.extend(Path(p) for p in glob.glob(text, recursive=True)[:10_000])

    for value in kwargs.values():
        visit(value)
    return paths, folders
