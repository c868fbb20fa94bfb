"""What `pipebench diagnose` passes the user's function: its `--set NAME=VALUE` arguments.

Parsed in the CLI process, before any worker starts (no TensorFlow here): a name that is no Python
identifier or a value that is not a YAML scalar or list is refused in one line. `PATH.py:FUNCTION`
itself is pipebench.pipeline.function's to parse (an experiment's `pipelines.functions` name
functions the same way); whether the function exists and takes these arguments is known once its
module is imported, in the worker (pipebench.pipeline.user_code).
"""
from __future__ import annotations

import keyword
from typing import Any

from pipebench.errors import UsageError
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
        value = parse_yaml(text, f"--set {name}") if text.strip() else ""
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)):
            raise UsageError(f"--set {name}: a YAML scalar or a list of scalars, not {echo(text)}")
        found[name] = value
    return found
