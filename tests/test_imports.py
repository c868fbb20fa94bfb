"""The package's import graph has no cycle, lazy (function-level) imports included; every package is on a floor
of the layers `lint-imports` checks; and what a command imports stays light: `pipebench --help` and the spec,
export and diagnose front ends import no TensorFlow.

A cycle hidden behind lazy imports (runner ↔ search.study, before the trial loop was one) still
ties two modules together: each needs the other to be read, tested or replaced.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("pipebench",)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                # `from pkg import sub` imports the submodule; `from mod import name` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Give the strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_cycle():
    graph = _graph()
    assert "pipebench.runner" in graph and graph["pipebench.runner"], "the graph was built"
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _floors() -> list[str]:
    """Give the modules named on the floors of the layers contract (pyproject.toml, checked by `lint-imports`)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: pytest's own TOML reader
        import tomli as tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["name"] == "pipebench layers"]
    return [name.strip() for floor in contract["layers"] for name in floor.split("|")]


def test_every_package_and_top_level_module_is_on_a_floor():
    """import-linter checks the imports between the modules it is given a floor for and nothing else: a new
    package or top-level module must be given one (pipebench/__init__.py holds only the version)."""
    named = _floors()
    tops = {".".join(_module_name(p).split(".")[:2]) for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    tops -= {"pipebench"}
    assert sorted(tops - set(named)) == [], "on no floor of [tool.importlinter] in pyproject.toml"
    assert len(named) == len(set(named)), "a module on two floors"


# --- what a command imports: each row runs in a fresh interpreter, which then lists the heavy modules it holds ---

_HELPS = [[], ["convert"], ["data", "synth"], ["sagemaker"], ["sagemaker", "launch"], ["diagnose"]]

#: name: (what the interpreter runs, the top-level modules it must not have imported)
LIGHT = {
    # matplotlib, pandas, boto3 and TensorFlow wait until a command needs them
    "help": ("from pipebench.cli import main\n"
             f"for argv in {[[*h, '--help'] for h in _HELPS]!r}:\n"
             "    try:\n        main(argv)\n    except SystemExit:\n        pass\n",
             ("tensorflow", "numba", "numpy", "pandas", "matplotlib", "boto3", "botocore")),
    "pipeline specs": ("import pipebench.pipeline.spec, pipebench.pipeline.orderings, pipebench.pipeline.presets, "
                       "pipebench.pipeline.export, pipebench.cli\n", ("tensorflow", "numba")),
    "pipelines export": ("from pipebench.cli import main\n"
                         "assert main(['pipelines', 'export', 'lambdaji-libsvm', '--out', 'input_fn.py']) == 0\n",
                         ("tensorflow",)),
    "diagnose front end": ("from pipebench.cli import build_parser\n"
                           "build_parser().parse_args(['diagnose', 'x.py:f', '--set', 'a=1', '--rounds', '3'])\n"
                           "import pipebench.diagnose.run, pipebench.diagnose.report, pipebench.diagnose.export\n",
                           ("tensorflow",)),
    # the facts of TensorFlow come from a child process
    "machine facts": ("import contextlib, io\nimport pipebench.measure.sampler\nfrom pipebench.cli import main\n"
                      "with contextlib.redirect_stdout(io.StringIO()):\n"
                      "    assert main(['env', '--json']) == 0\n", ("tensorflow",)),
}
_LISTS = "\nimport json, sys\nprint(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))\n"


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.tf] if name == "machine facts" else [])
                                  for name in LIGHT])
def test_a_command_imports_only_what_it_needs(name, tmp_path):
    code, heavy = LIGHT[name]
    child = subprocess.run([sys.executable, "-c", code + _LISTS], capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)
    assert child.returncode == 0, child.stderr[-3000:]
    imported = set(json.loads(child.stdout.splitlines()[-1]))
    assert not imported & set(heavy), f"{name} imported {sorted(imported & set(heavy))}"
    assert "pipebench" in imported, "the interpreter ran pipebench"
