"""What `pipebench diagnose` is pointed at, parsed in the CLI process (tests/test_imports.py: no TensorFlow)."""
from __future__ import annotations

import pytest

from pipebench.diagnose.target import parse_settings
from pipebench.pipeline.function import parse_function_ref
from pipebench.errors import ConfigError, UsageError


def test_a_function_ref_is_a_file_and_a_name(tmp_path):
    (tmp_path / "my_input.py").write_text("def input_fn():\n    pass\n")
    ref = parse_function_ref(f"{tmp_path}/my_input.py:input_fn")
    assert ref.path == str((tmp_path / "my_input.py").resolve()) and ref.name == "input_fn"
    for bad, says in ((f"{tmp_path}/my_input.py", "PATH.py:FUNCTION"), (f"{tmp_path}/my_input.py:1x", "function name"),
                      (f"{tmp_path}/my_input.py:class", "function name"), (f"{tmp_path}/gone.py:f", "no such file"),
                      (f"{tmp_path}:f", "not a .py file")):
        with pytest.raises(UsageError, match=says):
            parse_function_ref(bad)


def test_settings_are_yaml_scalars_or_lists():
    assert parse_settings(["batch_size=512", "files=[a.txt, b.txt]", "shuffle=true", "name=x", "rate=.5", "none=null",
                           "empty="]) == {"batch_size": 512, "files": ["a.txt", "b.txt"], "shuffle": True,
                                         "name": "x", "rate": 0.5, "none": None, "empty": ""}
    for bad, error in ((["batch_size"], UsageError), (["1x=2"], UsageError), (["a=1", "a=2"], UsageError),
                       (["a={b: 1}"], UsageError), (["a=[[1]]"], UsageError), (["a=[1"], UsageError),
                       (["a=!!python/object/apply:os.system [id]"], UsageError)):
        with pytest.raises(error) as raised:
            parse_settings(bad)
        assert not isinstance(raised.value, ConfigError), "every --set error is a usage error (exit 2)"


def test_the_paths_the_settings_name_are_inputs(tmp_path, monkeypatch):
    from pipebench.diagnose.target import named_paths

    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    for name in ("a.txt", "b.txt"):
        (tmp_path / "d" / name).write_text("x")
    paths, folders = named_paths({"files": ["d/a.txt", "gone.txt"], "pattern": "d/*.txt", "root": "d", "n": 3,
                                  "name": "gzip"})
    assert sorted(map(str, paths)) == ["d", "d/a.txt", "d/a.txt", "d/b.txt"] and list(map(str, folders)) == ["d"]

