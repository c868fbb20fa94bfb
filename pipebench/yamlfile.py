"""The one reader of YAML (and JSON) that users write: experiment files, pipeline specs, `--set` values.

Strict where PyYAML is lenient: a key given twice in one mapping is an error (PyYAML keeps the last
one silently, so a shared file edited in two places runs what its reader did not see), the file
must be UTF-8 text without NUL bytes, and only the safe tags load (no Python objects). Errors read
`FILE:LINE: reason` on one line.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pipebench.errors import ConfigError
from pipebench.values import echo

_MERGE = "tag:yaml.org,2002:merge"
_PROBLEM_CHARS = 150


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping names the same key twice."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated in one mapping (keys merged in with `<<` may be overridden)."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                except TypeError:  # an unhashable key: SafeLoader's own error says so
                    continue
                if repeated:
                    raise DuplicateKeyError(problem=f"duplicate key {echo(key)}", problem_mark=key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep)


def load_yaml(text: str) -> Any:
    """Give the YAML document in `text`; yaml.YAMLError (DuplicateKeyError for a repeated key) if it is not one."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 — a SafeLoader


def parse_yaml(text: str, where: str) -> Any:
    """Give the YAML (or JSON) document in `text`; ConfigError `WHERE:LINE: reason` if it does not parse."""
    try:
        return load_yaml(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        if mark is None and isinstance(err, yaml.reader.ReaderError):  # a control character: no mark, a position
            line = text.count("\n", 0, err.position) + 1
            raise ConfigError(f"{where}:{line}: not valid YAML: character U+{err.character:04X} is not allowed") from None
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        if isinstance(err, DuplicateKeyError):
            raise ConfigError(f"{at}: {err.problem}") from None
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        if problem.startswith("but ") and getattr(err, "context", None):
            problem = f"{err.context}, {problem}"
        if len(problem) > _PROBLEM_CHARS:  # it may quote the user's text (a tag, a key)
            problem = problem[:_PROBLEM_CHARS] + "…"
        raise ConfigError(f"{at}: not valid YAML: {problem}") from None


def read_yaml(path: Path) -> Any:
    """Give the YAML document in the file at `path`; ConfigError naming the file (and line) if it is not one."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror}") from None
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise ConfigError(f"{path}:{line}: holds a NUL byte: not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte 0x{data[err.start]:02x})") from None
    return parse_yaml(text, str(path))
