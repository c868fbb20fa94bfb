"""The one reader of YAML (and JSON) that users write: experiment files, pipeline specs, `--set` values.

Strict where PyYAML is lenient: a key given twice in one mapping is an error (PyYAML keeps the last
one silently, so a shared file edited in two places runs what its reader did not see), the file
must be UTF-8 text without NUL bytes, and only the safe tags load (no Python objects). Errors read
`FILE:LINE: reason` on one line.

Bounded, whatever the input: a file is read only up to MAX_FILE_BYTES; a document may nest at most
MAX_DEPTH levels and hold at most MAX_VALUES values counted with its aliases expanded (a
"billion laughs" of 400 bytes expands to 10⁹ values for whoever walks it), and no alias may
refer to a node that holds it. A scalar PyYAML cannot build (`2001-13-01`, an integer of 5,000
digits) is a `FILE:LINE` error too, not a Python exception.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pipebench.errors import ConfigError
from pipebench.values import echo

_MERGE = "tag:yaml.org,2002:merge"
_PROBLEM_CHARS = 150
#: Experiment files, pipeline specs and the instance catalog are a few KB.
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 100
#: More than a file of MAX_FILE_BYTES can hold without aliases (`[1,1,...]`: two bytes a value).
MAX_VALUES = 1_000_000


class RefusedYAMLError(yaml.MarkedYAMLError):
    """YAML that parses but is refused: a key given twice, a value that cannot be built, too deep, too many values."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated in one mapping (keys merged in with `<<` may be overridden),
    nesting deeper than MAX_DEPTH, and a scalar it cannot build, each with its line."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:  # before PyYAML's recursion meets Python's limit
                raise RefusedYAMLError(problem=f"nested more than {MAX_DEPTH} levels deep",
                                       problem_mark=self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as err:  # int('1' * 5000), date(2001, 13, 1)
            what = echo(node.value, 40) if isinstance(node, yaml.ScalarNode) else "this value"
            raise RefusedYAMLError(problem=f"cannot read {what} as {node.tag.rsplit(':', 1)[-1]}: "
                                           f"{str(err).split(':')[0][:80]}",
                                   problem_mark=node.start_mark) from None

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
                    raise RefusedYAMLError(problem=f"duplicate key {echo(key)}", problem_mark=key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return []


def _refuse_expansion(root: yaml.Node) -> None:
    """Raise RefusedYAMLError if the document, aliases expanded, holds over MAX_VALUES values or an alias cycle.

    Counts each node once (aliases share their node), so the check costs the size of the file, not
    of the expansion.
    """
    expanded: dict[int, int] = {}  # id(node) -> values it holds, aliases expanded
    open_nodes: set[int] = set()  # nodes whose children are being counted: one met again is a cycle
    todo: list[tuple[yaml.Node, bool]] = [(root, False)]
    while todo:
        node, counted = todo.pop()
        key = id(node)
        if counted:
            open_nodes.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in _children(node))
            if expanded[key] > MAX_VALUES:
                raise RefusedYAMLError(problem=f"aliases expand this to more than {MAX_VALUES:,} values",
                                       problem_mark=node.start_mark)
        elif key in open_nodes:
            raise RefusedYAMLError(problem="an alias refers to a node that holds it", problem_mark=node.start_mark)
        elif key not in expanded:
            open_nodes.add(key)
            todo.append((node, True))
            todo += [(child, False) for child in _children(node)]


def load_yaml(text: str) -> Any:
    """Give the YAML document in `text`; yaml.YAMLError (RefusedYAMLError: see the module docstring) if not one."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _refuse_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


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
        if isinstance(err, RefusedYAMLError):
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
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)  # a FIFO or /dev/zero as well as a file
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes, the most a YAML file pipebench reads "
                          "may hold (an experiment file is a few KB)")
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise ConfigError(f"{path}:{line}: holds a NUL byte: not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte 0x{data[err.start]:02x})") from None
    return parse_yaml(text, str(path))
