"""The one YAML reader: bounded cost whatever the file (size, aliases, nesting), one `FILE:LINE: reason` line."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pipebench.errors import ConfigError
from pipebench.yamlfile import MAX_DEPTH, MAX_FILE_BYTES, MAX_VALUES, parse_yaml, read_yaml


def laughs(levels: int = 9) -> str:
    """Give a "billion laughs" document (about 400 bytes): `name` holds 9**levels strings through aliases."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, levels)]
    return "\n".join(lines) + f"\nname: *a{levels - 1}\n"


def test_a_billion_laughs_is_refused_at_load_naming_its_line():
    with pytest.raises(ConfigError) as err:
        parse_yaml(laughs(), "exp.yaml")
    assert str(err.value) == f"exp.yaml:7: aliases expand this to more than {MAX_VALUES:,} values"


def test_aliases_within_the_budget_load_as_shared_values():
    doc = parse_yaml(laughs(3) + "base: &b {x: 1}\nuse: {<<: *b, y: 2}\n", "exp.yaml")
    assert len(doc["name"]) == 9 and doc["name"][0] is doc["name"][1] and doc["use"] == {"x": 1, "y": 2}


def test_an_alias_inside_its_own_node_is_refused():
    with pytest.raises(ConfigError, match=r"^exp\.yaml:2: an alias refers to a node that holds it$"):
        parse_yaml("name: x\na: &a [1, *a]\n", "exp.yaml")


def test_nesting_deeper_than_the_limit_is_refused_not_a_recursion_error():
    deep = "name: " + "[" * 50_000 + "]" * 50_000 + "\n"
    with pytest.raises(ConfigError, match=rf"^exp\.yaml:1: nested more than {MAX_DEPTH} levels deep$"):
        parse_yaml(deep, "exp.yaml")
    assert parse_yaml("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1), "exp.yaml") is not None


@pytest.mark.parametrize("text, says", [
    ("name: x\nwhen: 2001-13-01\n", r"^exp\.yaml:2: cannot read '2001-13-01' as timestamp: month must be in 1\.\.12$"),
    ("name: " + "1" * 5000 + "\n", r"^exp\.yaml:1: cannot read '1{39}… \(5,000 characters\) as int: Exceeds the limit"),
    ("n: !!float xyz\n", r"^exp\.yaml:1: cannot read 'xyz' as float: could not convert string to float$"),
])
def test_a_scalar_yaml_cannot_build_is_a_line_not_an_exception(text, says):
    with pytest.raises(ConfigError, match=says):
        parse_yaml(text, "exp.yaml")


def test_a_file_over_the_size_cap_is_refused_saying_the_cap(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("name: x\n" + "#" * MAX_FILE_BYTES + "\n")  # valid YAML: one long comment
    with pytest.raises(ConfigError) as err:
        read_yaml(path)
    assert str(err.value) == (f"{path}: larger than {MAX_FILE_BYTES:,} bytes, the most a YAML file pipebench reads "
                              "may hold (an experiment file is a few KB)")


def test_an_endless_stream_is_refused_after_reading_the_cap(tmp_path):
    """A FIFO fed forever (as `pipebench run <(yes)` would be): the reader stops after the cap, not at memory's end."""
    fifo = tmp_path / "exp.yaml"
    os.mkfifo(fifo)
    written = [0]
    block = b"\0" * 65536  # the old reader, which read to the end, then said "holds a NUL byte"

    def feed() -> None:
        with open(fifo, "wb") as f:
            try:
                while written[0] < 16 * MAX_FILE_BYTES:  # ends the test, should the reader never stop
                    f.write(block)
                    written[0] += len(block)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        with pytest.raises(ConfigError, match=r": larger than 1,048,576 bytes"):
            read_yaml(fifo)
    finally:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # unblock a writer still opening
        writer.join()
    assert written[0] <= MAX_FILE_BYTES + (1 << 20)  # the cap, the pipe's buffer and a block in flight


def test_binary_and_non_utf8_files_name_their_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:2: not UTF-8 text \(byte 0xff\)$"):
        read_yaml(Path(path))
