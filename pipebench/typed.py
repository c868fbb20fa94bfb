"""Strict JSON ↔ frozen dataclasses, for the records that cross a module or process boundary.

A missing key, an unknown key or a value of the wrong type is an error naming the file and the key
path, so a reader can never guess a path and print `?` or `None` instead of a fact (pyperf's `Run`,
asv's `Results`: one load, one save, a missing key is an error). A record that checks its own invariants
raises ValueError in its `__post_init__`; read from a file, that is the same one-line error. Supported field
types: bool, int, float, str, `X | None`, `tuple[X, ...]`, `tuple[X, Y]`, `list[X]`, `dict[str, X]`, Enum
subclasses, nested dataclasses and `Any` (handed on as is). A class with a JSON shape of its own (an Interval:
its open upper end is null) says so with `__json__` and `__from_json__`, and is written and read only through
them.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from pipebench.errors import DataError
from pipebench.values import echo

T = TypeVar("T")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {echo(value, 40)}"


def _fail(where: tuple[str, str], reason: str) -> DataError:
    file, path = where
    return DataError(f"{file}: {path or 'the document'}: {reason}")


def _at(where: tuple[str, str], key: object) -> tuple[str, str]:
    file, path = where
    return file, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)


def _convert(kind: Any, value: Any, where: tuple[str, str]) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _convert(options[0], value, where)
        for option in options:  # e.g. int | str: the first that takes the value
            try:
                return _convert(option, value, where)
            except DataError:
                continue
        raise _fail(where, f"must be one of {', '.join(getattr(o, '__name__', str(o)) for o in options)}, "
                           f"not {_describe(value)}")
    if hasattr(kind, "__from_json__"):
        return kind.__from_json__(_from_json(kind, value, where))
    if dataclasses.is_dataclass(kind):
        return _from_json(kind, value, where)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            raise _fail(where, f"must be one of {', '.join(str(m.value) for m in kind)}, "
                               f"not {_describe(value)}") from None
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise _fail(where, f"must be a list, not {_describe(value)}")
        if origin is tuple and args and args[-1] is not Ellipsis:  # tuple[int, str]: that many, each its own type
            if len(value) != len(args):
                raise _fail(where, f"must be a list of {len(args)}, not {_describe(value)}")
            return tuple(_convert(kind, v, _at(where, i)) for i, (kind, v) in enumerate(zip(args, value)))
        item = args[0] if args else Any
        items = [_convert(item, v, _at(where, i)) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(where, f"must be a mapping, not {_describe(value)}")
        item = args[1] if len(args) == 2 else Any
        return {str(k): _convert(item, v, _at(where, str(k))) for k, v in value.items()}
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(kind, type) and isinstance(value, kind):
        return value
    raise _fail(where, f"must be {getattr(kind, '__name__', kind)}, not {_describe(value)}")


def _from_json(cls: type[T], obj: Any, where: tuple[str, str]) -> T:
    if not isinstance(obj, dict):
        raise _fail(where, f"must be a mapping, not {_describe(obj)}")
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(obj) - set(names))
    if unknown:
        expected = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        raise _fail(_at(where, unknown[0]), f"unknown key (expected one of {expected})")
    missing = [name for name in names if name not in obj]
    if missing:
        raise _fail(_at(where, missing[0]), "missing")
    hints = _hints(cls)
    values = {name: _convert(hints[name], obj[name], _at(where, name)) for name in names}
    try:
        return cls(**values)
    except ValueError as err:  # the record's own invariants (its __post_init__), e.g. TrialRecord's
        raise _fail(where, str(err)) from None


def from_json(cls: type[T], obj: Any, file: str) -> T:
    """Give `cls` built from a parsed JSON mapping; DataError `FILE: key.path: reason` otherwise."""
    return _convert(cls, obj, (str(file), ""))


def read_json(path: Path) -> Any:
    """Give a JSON file's document; DataError `FILE:LINE: not valid JSON: why` (or why it cannot be read)."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise DataError(f"{path}: {err.strerror or err}") from None
    return parse_json(data, str(path))


def parse_json(data: bytes, where: str) -> Any:
    """Give the JSON document in `data`, read from `where`; DataError `WHERE:LINE: not valid JSON: why` otherwise."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{where}: not UTF-8 text (byte {err.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{where}:{err.lineno}: not valid JSON: {err.msg}") from None
    except RecursionError:  # arrays or objects nested deeper than Python's recursion limit
        raise DataError(f"{where}: not valid JSON for pipebench: nested too deeply") from None


def load_json(cls: type[T], path: Path) -> T:
    """Give `cls` read from a JSON file; one-line DataError naming the file (and key path) otherwise."""
    return from_json(cls, read_json(path), str(path))


def to_json(obj: Any) -> Any:
    """Give a dataclass (or any value made of them) as plain JSON values: enums by value, tuples as lists."""
    if hasattr(obj, "__json__") and not isinstance(obj, type):
        return obj.__json__()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    return obj
