"""export(): standalone input_fn modules that, run in a fresh process, yield the builder's batches."""
from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from badinput import Bad, cases
from lazy import lazy
from pipeline_fixtures import FORMATS, ROWS_PER_RECORD
from pipeline_fixtures import batches as rows_of_batches
from report_fixtures import SCALAR, VECTORIZED, configuration, machine, make_run, passing_rows, study_record, trial

from pipebench.cli import main
from pipebench.errors import ConfigError
from pipebench.pipeline.export import SPEC_MARK, export
from pipebench.pipeline.orderings import Enumeration
from pipebench.pipeline.presets import PRESETS, preset
from pipebench.pipeline.spec import PipelineSpec
from pipebench.results.study import write_study

build = lazy("pipebench.measure.build", "build")

# Runs every exported module in one fresh interpreter and saves each one's batches as .npz.
_CHILD = r"""
import importlib.util, json, sys
import numpy as np
for i, job in enumerate(json.loads(sys.argv[1])):
    loader = importlib.util.spec_from_file_location(f"exported_{i}", job["module"])
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    dataset = module.input_fn(*job["args"])
    arrays = {}
    for n, (features, labels) in enumerate(dataset.as_numpy_iterator()):
        arrays[f"ids{n}"], arrays[f"vals{n}"] = features["feat_ids"], features["feat_vals"]
        arrays[f"labels{n}"] = labels
    np.savez(job["out"], **arrays)
    with open(job["out"] + ".json", "w") as f:
        json.dump({"element_spec": repr(dataset.element_spec), "batches": n + 1}, f)
"""

# Builds each spec with pipebench's builder in one fresh interpreter and saves its batches as .npz: the builder's
# batches are compared in fresh processes on both sides (a test worker that ran the diagnose tests before built
# file-mode orderings in another row order, 2026-12-02, cause not found: see the stop note).
_BUILDER_CHILD = r"""
import json, sys
import numpy as np
from pipebench.measure.build import build
from pipebench.pipeline.spec import PipelineSpec
for job in json.loads(sys.argv[1]):
    arrays = {}
    for n, (features, labels) in enumerate(build(PipelineSpec.from_text(job["spec"])).dataset.as_numpy_iterator()):
        arrays[f"ids{n}"], arrays[f"vals{n}"], arrays[f"labels{n}"] = features["feat_ids"], features["feat_vals"], labels
    np.savez(job["out"], **arrays)
"""


def _fresh_arrays(specs: list, folder: Path) -> list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Give each spec's batches as pipebench's builder yields them in a fresh process."""
    jobs = [{"spec": spec.to_yaml(), "out": str(folder / f"built-{i}.npz")} for i, spec in enumerate(specs)]
    child = subprocess.run([sys.executable, "-c", _BUILDER_CHILD, json.dumps(jobs)], capture_output=True, text=True)
    assert child.returncode == 0, child.stderr[-3000:]
    found = []
    for job in jobs:
        saved = np.load(job["out"])
        count = sum(1 for key in saved.files if key.startswith("ids"))
        found.append([(saved[f"ids{n}"], saved[f"vals{n}"], saved[f"labels{n}"]) for n in range(count)])
    return found


# Stands in for the SageMaker package: the channel's "FIFO" is the files named in the environment.
_FAKE_SAGEMAKER = """
import json, os
import tensorflow as tf

def PipeModeDataset(channel, record_format):
    files = json.loads(os.environ["FAKE_PIPE_CHANNELS"])[channel]
    return (tf.data.TextLineDataset if record_format == "TextLine" else tf.data.TFRecordDataset)(files)
"""


def _spec(name: str, fmt: str, data: dict) -> PipelineSpec:
    spec = preset(name, format=fmt, files=(data[fmt],), batch_size=64, epochs=2, seed=9)
    spec = spec.with_option("deterministic", True)
    spec = spec.with_option("experimental_optimization.no_such_flag_anywhere", True)  # probed, warned, skipped
    return spec.with_source(rows_per_record=ROWS_PER_RECORD) if fmt == "packed" else spec


@pytest.mark.tf214
def test_exported_modules_in_a_fresh_process_yield_the_builders_batches(data, tmp_path):
    sagemaker = tmp_path / "fake" / "sagemaker_tensorflow"
    sagemaker.mkdir(parents=True)
    (sagemaker / "__init__.py").write_text(_FAKE_SAGEMAKER)
    jobs, expected, channels = [], [], {}
    cases = [(name, fmt, "file") for name in PRESETS for fmt in FORMATS]
    cases += [("aws-sample", fmt, "pipe") for fmt in FORMATS]
    cases += [("guide", fmt, "fastfile") for fmt in ("libsvm", "tfrecord")]  # the builder emulates, export reads
    for name, fmt, mode in cases:
        spec = _spec(name, fmt, data)
        if mode == "fastfile":
            spec = spec.with_source(mode="fastfile")
        built = build(spec)
        expected.append((f"{name}/{fmt}/{mode}", built, spec))
        stem = str(tmp_path / f"{name}-{fmt}-{mode}")
        if mode == "pipe":
            channels[f"train_{fmt}"] = built.files
            spec = spec.with_source(mode="pipe", files=(), channel=f"train_{fmt}")
            args = []
        else:
            args = [data[fmt]]  # one glob string
        Path(stem + ".py").write_text(export(spec))
        jobs.append({"module": stem + ".py", "args": args, "out": stem + ".npz"})
    arrays = _fresh_arrays([spec for _, _, spec in expected], tmp_path)
    expected = [(case, built, batches) for (case, built, _), batches in zip(expected, arrays)]
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "fake"), FAKE_PIPE_CHANNELS=json.dumps(channels))
    child = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(jobs)], env=env, capture_output=True, text=True)
    assert child.returncode == 0, child.stderr[-3000:]
    assert child.stderr.count("no_such_flag_anywhere") == len(jobs)  # each module warned once, none failed
    for job, (case, built, batches) in zip(jobs, expected):
        assert built.unsupported_options == ["experimental_optimization.no_such_flag_anywhere"]
        meta = json.loads(Path(job["out"] + ".json").read_text())
        assert meta == {"element_spec": repr(built.dataset.element_spec), "batches": len(batches)}, case
        saved = np.load(job["out"])
        for n, (ids, vals, labels) in enumerate(batches):
            assert np.array_equal(saved[f"ids{n}"], ids), case
            assert np.array_equal(saved[f"vals{n}"], vals), case
            assert np.array_equal(saved[f"labels{n}"], labels), case


def test_exported_module_needs_only_tensorflow(data):
    for name in PRESETS:
        for fmt in FORMATS:
            tree = ast.parse(export(_spec(name, fmt, data)))
            imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                        for alias in node.names}
            imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
            assert imported == {"tensorflow"}, (name, fmt)
    pipe = preset("aws-sample").with_source(mode="pipe")
    text = export(pipe)
    assert "from sagemaker_tensorflow import PipeModeDataset" in text
    assert "def input_fn(channel='train', batch_size=1024, num_epochs=10):" in text
    assert "list_files" not in text


def _header(text: str) -> str:
    """Give the text of a module's leading `#` comment block, the `# ` prefixes removed."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[2:])
    return "\n".join(lines)


def test_exported_module_embeds_the_spec_and_its_fingerprint(data):
    spec = _spec("guide", "packed", data)
    text = export(spec)
    header = _header(text)
    assert spec.fingerprint() in header
    assert PipelineSpec.from_text(header.split(f"{SPEC_MARK}\n", 1)[1]) == spec
    assert "ROWS_PER_RECORD = 16" in text


def test_cli_export_writes_a_module(tmp_path, cli):
    """tests/test_imports.py checks that the export imports no TensorFlow."""
    out = tmp_path / "input_fn.py"
    code, said, _ = cli("pipelines", "export", "lambdaji-libsvm", "--out", out)
    assert code == 0 and "decode > prefetch > shuffle > repeat > batch" in said
    compile(out.read_text(), str(out), "exec")


def test_cli_export_refuses_to_overwrite_without_force(tmp_path, capsys):
    out = tmp_path / "input_fn.py"
    out.write_text("# mine\n")
    assert main(["pipelines", "export", "guide", "--out", str(out)]) == 2
    assert "already exists (use --force to replace it)" in capsys.readouterr().err
    assert out.read_text() == "# mine\n"
    assert main(["pipelines", "export", "guide", "--out", str(out), "--force", "--format", "packed"]) == 0
    assert "packed_decoder(FIELD_SIZE, ROWS_PER_RECORD)" in out.read_text()


def test_cli_exports_a_spec_file(tmp_path, data):
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(_spec("guide", "libsvm", data).to_json())
    out = tmp_path / "input_fn.py"
    assert main(["pipelines", "export", str(spec_file), "--out", str(out)]) == 0
    text = out.read_text()
    assert "decode = libsvm_decoder(FIELD_SIZE)" in text and "seed=9" in text


@pytest.mark.parametrize("mode", ["file", "fastfile"])
def test_file_and_fastfile_exports_take_files(mode):
    text = export(preset("aws-sample").with_source(mode=mode))
    assert "def input_fn(files, batch_size=1024, num_epochs=10):" in text
    assert ("/opt/ml/input/data/train" in text) == (mode == "fastfile")


# ---- issue 12: spec text is data, never code ------------------------------------------------------------

# Each payload would make the folder `pwned` if the text around it ended a string ("""/''') or a
# comment (\n, \r) in the module; `#` and backslashes must not turn into code or escapes either.
PAYLOADS = ("'''" '"""' " \\ # \r\n",
            '__import__("os").mkdir("pwned")\n',
            '\r__import__("os").mkdir("pwned")\r',
            '""" + __import__("os").mkdir("pwned") + """',
            "''' + __import__(\"os\").mkdir(\"pwned\") + '''")
HOSTILE = "".join(PAYLOADS)
# Text no file name can hold (NUL), and the other characters some tools take for line ends.
UNNAMEABLE = HOSTILE + "\0\x0b\x0c\x1c\x85\u2028\u2029\x7f"


def _hostile_spec(files: tuple[str, ...], channel: str, cache: str, mode: str = "file") -> PipelineSpec:
    return PipelineSpec.from_dict({
        "source": {"format": "libsvm", "mode": mode, "files": list(files), "channel": channel},
        "stages": ["interleave", {"cache": cache}, {"shuffle": {"buffer_size": 100, "seed": 5}}, {"batch": 64},
                   "decode", {"repeat": 2}, "prefetch"] if mode != "pipe" else
                  [{"cache": cache}, {"shuffle": {"buffer_size": 100, "seed": 5}}, {"batch": 64}, "decode",
                   {"repeat": 2}, "prefetch"],
        "options": {"deterministic": True}})


def test_every_string_field_a_spec_accepts_is_exercised_and_the_rest_refuse_hostile_text():
    """The spec's string fields: files, channel and a cache location take any text; the others are
    checked against fixed choices or identifiers, so hostile text cannot reach the exporter through them."""
    spec = _hostile_spec((UNNAMEABLE,), UNNAMEABLE, UNNAMEABLE)
    assert spec.source.files == (UNNAMEABLE,) and spec.source.channel == UNNAMEABLE
    assert spec.stage("cache")["location"] == UNNAMEABLE
    good = spec.to_dict()
    refused = {
        ("source", "format"), ("source", "mode"), ("source", "compression"), ("source", "num_parallel_reads"),
        ("stages", 0, "interleave", "cycle_length"), ("stages", 0, "interleave", "num_parallel_calls"),
        ("stages", 4, "decode", "num_parallel_calls"), ("stages", 6, "prefetch", "buffer_size"),
    }
    for path in refused:
        doc = json.loads(json.dumps(good))
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = HOSTILE
        with pytest.raises(ConfigError):
            PipelineSpec.from_dict(doc)
    with pytest.raises(ConfigError, match="not an option name"):
        PipelineSpec.from_dict({**good, "options": {"experimental_optimization": {HOSTILE: True}}})
    with pytest.raises(ConfigError, match="must be one of"):
        PipelineSpec.from_dict({**good, "stages": [HOSTILE]})
    # A spec file's `enumerate:` rules name stages and difference labels; export never writes them.
    with pytest.raises(ConfigError, match="stage in pipelines.stages"):
        Enumeration.from_dict({**good, "enumerate": {"pin": {HOSTILE: "last"}}})
    with pytest.raises(ConfigError, match="must be first or last"):
        Enumeration.from_dict({**good, "enumerate": {"pin": {"prefetch": HOSTILE}}})
    with pytest.raises(ConfigError, match="unknown difference"):
        Enumeration.from_dict({**good, "enumerate": {"allow": [HOSTILE]}})


@pytest.mark.slow
def test_exported_module_with_unnameable_text_imports_without_side_effects(tmp_path):
    """Each payload alone, and all of them with text no file can be named (NUL, odd line ends), only
    ever land in comments and literals: importing the modules runs nothing but their definitions."""
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    modules = {}
    for i, text in enumerate((UNNAMEABLE, *PAYLOADS)):
        for mode in ("file", "fastfile", "pipe"):
            spec = _hostile_spec(() if mode == "pipe" else (text,), text, text, mode)
            modules[f"m{i}_{mode}"] = (spec, export(spec))
            (sandbox / f"m{i}_{mode}.py").write_text(modules[f"m{i}_{mode}"][1])
    names = list(modules)
    # Import them all with TensorFlow stubbed out: nothing at module level may run anything else.
    stub = tmp_path / "stub"
    (stub / "tensorflow").mkdir(parents=True)
    (stub / "tensorflow" / "__init__.py").write_text("class data:\n    AUTOTUNE = -1\n")
    (stub / "sagemaker_tensorflow").mkdir()
    (stub / "sagemaker_tensorflow" / "__init__.py").write_text("PipeModeDataset = None\n")
    code = ("import importlib\n"
            f"for name in {names!r}:\n"
            "    try:\n"
            "        module = importlib.import_module(name)\n"
            "    except BaseException as err:\n"
            "        print(name, repr(err)[:200])\n"
            f"print(importlib.import_module('m0_pipe').input_fn.__defaults__[0] == {UNNAMEABLE!r})")
    child = subprocess.run([sys.executable, "-c", code], cwd=sandbox, capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=f"{stub}{os.pathsep}{sandbox}"))
    assert not (sandbox / "pwned").exists(), "a payload ran on import"
    assert child.returncode == 0 and child.stdout == "True\n", child.stdout[-2000:] + child.stderr[-2000:]
    assert sorted(p.name for p in sandbox.iterdir() if p.name != "__pycache__") == sorted(f"{n}.py" for n in names)
    for name, (spec, module) in modules.items():
        tree = ast.parse(module)
        kinds = {type(node).__name__ for node in tree.body}
        assert kinds <= {"Expr", "Import", "ImportFrom", "Assign", "FunctionDef"}, (name, kinds)
        assert [n for n in tree.body if isinstance(n, ast.Expr)] == tree.body[:1], name  # only the docstring
        assert PipelineSpec.from_text(_header(module).split(f"{SPEC_MARK}\n", 1)[1]) == spec, name


@pytest.mark.tf214
def test_cli_export_of_hostile_text_runs_no_code_and_yields_the_builders_batches(data, tmp_path):
    """Issue 12: a spec whose every free-text field holds quotes, backslashes, #, CR and newlines
    exports (through the CLI) to modules that import without running any of it and yield, on real
    files in a folder named by that text, the builder's batches (file, FastFile and Pipe mode)."""
    folder = tmp_path / HOSTILE  # a real folder: the text is a file name here, so the data is real
    folder.mkdir()
    for part in sorted(Path(data["libsvm"]).parent.glob("part-*.libsvm")):
        (folder / part.name).write_bytes(part.read_bytes())
    glob = str(folder).replace("\\", "\\\\") + "/part-*.libsvm"  # TensorFlow's glob escapes with a backslash
    sandbox = tmp_path / "sandbox"  # the child's cwd, where a payload would make `pwned`
    sagemaker = tmp_path / "fake" / "sagemaker_tensorflow"
    sagemaker.mkdir(parents=True)
    (sagemaker / "__init__.py").write_text(_FAKE_SAGEMAKER)
    sandbox.mkdir()
    jobs, expected, channels = [], [], {}
    for mode in ("file", "fastfile", "pipe"):
        cache = str(folder / f"cache-{mode}")
        spec = _hostile_spec((glob,), HOSTILE, cache, "pipe" if mode == "pipe" else mode)
        built_spec = _hostile_spec((glob,), HOSTILE, cache) if mode == "pipe" else spec
        built = build(built_spec)
        assert len(built.files) == 2
        (tmp_path / "built").mkdir(exist_ok=True)
        expected.append((mode, built, _fresh_arrays([built_spec], tmp_path / "built")[0]))
        for written in folder.glob("cache-*"):  # so the exported module writes its own cache, not reads ours
            written.unlink()
        if mode == "pipe":
            channels[HOSTILE] = built.files
        spec_file = tmp_path / f"{mode}.yaml"
        spec_file.write_text(spec.to_yaml())
        module = tmp_path / f"{mode}.py"
        assert main(["pipelines", "export", str(spec_file), "--out", str(module)]) == 0
        jobs.append({"module": str(module), "args": [] if mode == "pipe" else [glob],
                     "out": str(tmp_path / f"{mode}.npz")})
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "fake"), FAKE_PIPE_CHANNELS=json.dumps(channels))
    child = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(jobs)], env=env, cwd=sandbox,
                           capture_output=True, text=True)
    assert child.returncode == 0, child.stderr[-3000:]
    assert list(sandbox.iterdir()) == []  # no payload ran
    for job, (mode, _built, batches) in zip(jobs, expected):
        saved = np.load(job["out"])
        assert len(batches) == json.loads(Path(job["out"] + ".json").read_text())["batches"] == 20, mode
        for n, (ids, vals, labels) in enumerate(batches):
            assert np.array_equal(saved[f"ids{n}"], ids), mode
            assert np.array_equal(saved[f"vals{n}"], vals), mode
            assert np.array_equal(saved[f"labels{n}"], labels), mode


# ---- issue 14: export a run's fastest configuration, the study's winner, or any trial ----------------------

def _run_folder(folder: Path, rows: list[dict] | None = None) -> Path:
    return make_run(folder / "run", rows if rows is not None else passing_rows([]), machine())


def _exported_ordering(out: Path) -> str:
    return _header(out.read_text()).splitlines()[0].split(": ", 1)[1].rstrip(".")


def test_a_run_exports_its_fastest_configuration_with_repeats_pooled(tmp_path, capsys):
    """A lucky repeat of a scalar-decode pipeline must not be what a user pastes into training."""
    lucky = [trial(f"lucky-r{r}", "train", "lambdaji-libsvm", "libsvm", SCALAR, rate, [], repeat=r,
                   configuration_id="lucky") for r, rate in enumerate([34000, 18000, 19000])]
    steady = configuration("steady", "train", "aws-sample", "tfrecord", VECTORIZED, 25000, [], intra_op_threads=2)
    fast_input = configuration("input", "input", "lambdaji-libsvm", "libsvm", SCALAR, 900000, [])
    run = _run_folder(tmp_path, lucky + steady + fast_input)
    out = tmp_path / "input_fn.py"
    assert main(["pipelines", "export", str(run), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "of the fastest train-mode configuration, 25,000 (" in said and "over 3 repeat(s) (trial steady-r0)" in said
    assert "intra / inter-op threads 2 / default, env none set: set those in training too" in said
    assert _exported_ordering(out) == "cache > shuffle > batch > decode > repeat > prefetch"
    assert "Format tfrecord, file mode" in out.read_text()
    compile(out.read_text(), str(out), "exec")


def test_a_run_without_train_trials_exports_its_fastest_input_configuration(tmp_path, capsys):
    run = _run_folder(tmp_path, configuration("slow", "input", "aws-sample", "tfrecord", VECTORIZED, 10000, [])
                      + configuration("quick", "input", "lambdaji-libsvm", "libsvm", SCALAR, 20000, []))
    assert main(["pipelines", "export", str(run), "--out", str(tmp_path / "input_fn.py")]) == 0
    assert "fastest input-mode configuration" in capsys.readouterr().out
    assert _exported_ordering(tmp_path / "input_fn.py") == "decode > shuffle > batch > repeat > prefetch"


def test_a_study_run_exports_the_winner_the_study_recorded(tmp_path, capsys):
    run = _run_folder(tmp_path)
    write_study(run, study_record(trial_ids=("elsewhere", "t-train-svm-r1")))
    assert main(["pipelines", "export", str(run), "--out", str(tmp_path / "a.py")]) == 0
    assert "the study's confirmed winner, trial t-train-svm-r1" in capsys.readouterr().out
    assert _exported_ordering(tmp_path / "a.py") == "decode > shuffle > batch > repeat > prefetch"
    write_study(run, study_record(trial_ids=("elsewhere",)))
    assert main(["pipelines", "export", str(run), "--out", str(tmp_path / "b.py")]) == 0
    assert "the fastest train-mode configuration" in capsys.readouterr().out  # a winner not in this run: the ranking


def test_any_trial_exports_by_id_even_one_that_never_finished(tmp_path, capsys):
    from pipebench.testing import trial_spec

    run = _run_folder(tmp_path)
    assert main(["pipelines", "export", str(run), "--trial", "t-input-svm-r2", "--out", str(tmp_path / "a.py")]) == 0
    assert "of trial t-input-svm-r2 (input mode, ok)" in capsys.readouterr().out
    assert _exported_ordering(tmp_path / "a.py") == "decode > shuffle > batch > repeat > prefetch"
    unfinished = run / "trials" / "killed"
    unfinished.mkdir(parents=True)
    (unfinished / "trial.json").write_text(json.dumps(trial_spec(trial_id="killed").to_json()))
    assert main(["pipelines", "export", str(run), "--trial", "killed", "--out", str(tmp_path / "b.py")]) == 0
    assert "of trial killed (not finished: " in capsys.readouterr().out
    assert _exported_ordering(tmp_path / "b.py") == "batch > decode > repeat > prefetch"


def _run_in(folder: Path) -> None:
    _run_folder(folder)


def _run_of_failed_trials(folder: Path) -> None:
    _run_folder(folder, [dataclasses.replace(row, status="failed") for row in passing_rows([])])


EXPORT_CASES = [
    Bad("export-unknown-trial", ("pipelines", "export", "{tmp}/run", "--trial", "nope", "--out", "{tmp}/x.py"),
        r"^{tmp}/run: no trial 'nope' \(21 trials in trials.parquet", make=_run_in, out="x.py", code=2, process=True),
    Bad("export-path-as-trial", ("pipelines", "export", "{tmp}/run", "--trial", "../run", "--out", "{tmp}/x.py"),
        r"^{tmp}/run: no trial '../run' ", make=_run_in, out="x.py", code=2),
    Bad("export-long-trial", ("pipelines", "export", "{tmp}/run", "--trial", "t" * 5000, "--out", "{tmp}/x.py"),
        r"^{tmp}/run: no trial 't+… \(5,000 characters\) ", make=_run_in, out="x.py", code=2),
    Bad("export-not-a-run", ("pipelines", "export", "{tmp}/empty", "--out", "{tmp}/x.py"),
        r"^{tmp}/empty: no trials.parquet: not a pipebench run folder", make=lambda f: (f / "empty").mkdir(),
        out="x.py", code=2),
    Bad("export-run-with-format", ("pipelines", "export", "{tmp}/run", "--format", "packed", "--out", "{tmp}/x.py"),
        r"^pipelines export: {tmp}/run: --format changes a spec or preset, not a run folder", make=_run_in,
        out="x.py", code=2),
    Bad("export-trial-of-a-preset", ("pipelines", "export", "guide", "--trial", "t", "--out", "{tmp}/x.py"),
        r"^pipelines export: --trial picks a trial of a run folder, and guide is not a folder", out="x.py", code=2),
    Bad("export-run-without-finished-trials", ("pipelines", "export", "{tmp}/run", "--out", "{tmp}/x.py"),
        r"^{tmp}/run: no finished train or input trial to export \(give --trial ID",
        make=_run_of_failed_trials,
        out="x.py", code=2),
]


@pytest.mark.parametrize("case", cases(EXPORT_CASES))
def test_export_from_a_run_refused(case, tmp_path, run_case):
    run_case(case, tmp_path)


@pytest.mark.tf
@pytest.mark.parametrize("name", PRESETS)
def test_a_preset_is_walked_into_the_stages_diagnose_reads_and_replayed_to_the_builders_batches(name, data, tmp_path):
    """pipebench's presets and a user's function are one kind of thing: a preset's exported input_fn, loaded and
    walked as diagnose walks a user's (pipebench.pipeline.walk), gives the spec's stages in order, each at its line
    of the module, and its steps replayed by the one builder module (pipebench.measure.build.replay) yield the batches
    build(spec) yields: `pipebench diagnose` takes a preset as it takes a user's input_fn."""
    from pipebench.measure.build import replay, steps_of
    from pipebench.pipeline.user_code import load
    from pipebench.pipeline.walk import walk

    spec = preset(name, format="libsvm", files=(data["libsvm"],), batch_size=64, epochs=1, seed=9)
    module = tmp_path / f"{name.replace('-', '_')}_input.py"
    module.write_text(export(spec))
    loaded = load(str(module), "input_fn", {"files": data["libsvm"]})
    walked = walk(loaded.dataset, loaded.sites, loaded.module, loaded.library_calls)
    outer = [s for s in walked.stages if s.inside is None]
    kinds = [s.kind for s in outer[1:]]
    assert [k for k in kinds if k != "map"] == [k for k in spec.kinds if k != "decode"], kinds
    assert kinds.count("map") == 1 and kinds.index("map") == spec.kinds.index("decode"), kinds
    assert all(s.place is not None and s.place.file == str(module) for s in outer), [s.call for s in outer]
    steps, why = steps_of(walked)
    assert why is None, why
    assert rows_of_batches(replay(steps, walked)) == rows_of_batches(build(spec).dataset)
