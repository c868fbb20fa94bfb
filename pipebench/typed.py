"""Strict JSON ↔ frozen dataclasses, for the records that cross a module or process boundary.

A missing key, an unknown key or a value of the wrong type is an error naming the file and the key
path, so a reader can never guess a path and print `?` or `None` instead of a fact (pyperf's `Run`,
asv's `Results`: one load, one save, a missing key is an error). A record that checks its own invariants
raises ValueError in its `__post_init__`; read from a file, that is the same one-line error. Supported field
types: bool, int, float, str, `X | None`, `tuple[X, ...]`, `tuple[X, Y]`, `list[X]`, `dict[str, X]`, Enum
subclasses, nested dataclasses and `Any`. A class with a JSON shape of its own (an Interval: its open upper end
is null) says so with `__json__` and `__from_json__`, and is written and read only through them.

An `Any` field holds a user's values (`--set` arguments, a stage's parameters), which must cross every file and
process boundary pipebench makes as they were given: what strict JSON cannot hold is written as a one-key mapping
naming its kind — {"$float": "nan"} (NaN, ±inf), {"$date": "2024-01-01"}, {"$datetime": ...}, {"$bytes": base64},
{"$set": [...]} — and a user's own mapping that looks like one as {"$map": [[key, value], ...]}, read back the
same way. Integers of any size are JSON's already.
"""
from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import functools
import json
import math
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


_TAGS = ("$float", "$date", "$datetime", "$bytes", "$set", "$map")


def encode_value(value: Any) -> Any:
    """Give a user's value as strict JSON values, losslessly (module docstring)."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, datetime.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (set, frozenset)):
        return {"$set": [encode_value(v) for v in sorted(value, key=repr)]}
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not (len(value) == 1 and next(iter(value)) in _TAGS):
            return {k: encode_value(v) for k, v in value.items()}
        return {"$map": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    return to_json(value)


def decode_value(value: Any, where: tuple[str, str] = ("a value", "")) -> Any:
    """Give back what encode_value wrote."""
    if isinstance(value, list):
        return [decode_value(v, _at(where, i)) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    if len(value) != 1 or next(iter(value)) not in _TAGS:
        return {k: decode_value(v, _at(where, k)) for k, v in value.items()}
    tag, body = next(iter(value.items()))
    try:
        if tag == "$float":
            return float(body)
        if tag == "$date":
            return datetime.date.fromisoformat(body)
        if tag == "$datetime":
            return datetime.datetime.fromisoformat(body)
        if tag == "$bytes":
            return base64.b64decode(body, validate=True)
        if tag == "$set":
            return {_hashable(decode_value(v, where)) for v in body}
        return {_hashable(decode_value(k, where)): decode_value(v, where) for k, v in body}
    except (TypeError, ValueError) as err:
        raise _fail(_at(where, tag), f"not a value pipebench wrote: {err}") from None


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


def _holds_users(kind: Any) -> bool:
    """Whether a field of this type holds a user's values (Any somewhere in it, not inside a record)."""
    if kind is Any:
        return True
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    return origin in (dict, list, tuple, typing.Union, types.UnionType) and any(_holds_users(a) for a in args)


def _convert(kind: Any, value: Any, where: tuple[str, str]) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return decode_value(value, where)
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
        if isinstance(value, dict) and set(value) == {"$float"}:
            return decode_value(value, where)
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
        hints = _hints(type(obj))
        return {f.name: (encode_value if _holds_users(hints[f.name]) else to_json)(getattr(obj, f.name))
                for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    return obj
