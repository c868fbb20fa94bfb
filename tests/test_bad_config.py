"""Bad-input corpus for experiment files, `--set` values and the spec files `pipelines list/export` read.

Every `run` case's experiment would make synthetic data under the case folder (`data.cache_dir`)
and write its run under it (`results`): the harness checks the folder is unchanged, so each case
proves validation refuses the file before anything is made or written.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from badinput import EXPERIMENT_HEAD, Bad, cases

# A valid experiment; cases append to it or replace a line.
EXPERIMENT = EXPERIMENT_HEAD + """\
model:
  dropout: 0.5
  learning_rate: 0.001
measurement:
  window_sec: 0.2
  sample_hz: 4
budget:
  max_failure_rate: 0.5
"""

# A valid pipeline spec for `pipelines list/export`.
SPEC = """\
source: {format: libsvm, files: [data/part-*.libsvm]}
stages:
  - shuffle: {buffer_size: 1000, seed: 7}
  - batch: {batch_size: 64}
  - decode
  - prefetch
"""


def _file(name: str, content: str | bytes) -> callable:
    def make(folder: Path) -> None:
        data = content.encode() if isinstance(content, str) else content
        (folder / name).write_bytes(data)
    return make


def _experiment(old: str = "", new: str = "", extra: str = "") -> callable:
    assert old in EXPERIMENT
    return _file("exp.yaml", EXPERIMENT.replace(old, new, 1) + extra)


def _spec(old: str = "", new: str = "") -> callable:
    assert old in SPEC
    return _file("spec.yaml", SPEC.replace(old, new, 1))


def _run(*extra: str) -> tuple[str, ...]:
    return ("run", "exp.yaml", *extra)


def _files(extra: str, **content: bytes) -> callable:
    """Give a maker of the experiment with `extra` appended to its data block, and data files beside it."""
    def make(folder: Path) -> None:
        _experiment("  cache_dir: cache\n", "  cache_dir: cache\n" + extra)(folder)
        for name, data in content.items():
            (folder / name).write_bytes(data)
    return make


LIBSVM_ROWS = b"1 1:1 2:0.5\n0 1:0 2:1\n"


def _manifest(**changed) -> bytes:
    """Give a converter manifest pipebench wrote (tests/golden), in today's spelling, with `changed` keys replaced."""
    found = json.loads((Path(__file__).parent / "golden" / "formats-before-2026-11-26" / "manifest-quarantine.json")
                       .read_text())
    return json.dumps({"schema_version": found.pop("manifest_version"), **found, **changed}).encode()


def _with_manifest(manifest: bytes) -> callable:
    """Give a maker of the experiment reading d/a.libsvm, with `manifest` as the converter manifest beside it."""
    def make(folder: Path) -> None:
        _files("  files: {libsvm: [d/a.libsvm]}\n")(folder)
        (folder / "d").mkdir()
        (folder / "d" / "a.libsvm").write_bytes(LIBSVM_ROWS)
        (folder / "d" / "manifest.json").write_bytes(manifest)
    return make


def _laughs() -> str:
    """Give a YAML "billion laughs" of one line (about 330 bytes): a list of 9**9 strings through aliases."""
    levels = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"&a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 9)]
    return f"[{', '.join(levels)}]"

RAW_CRITEO = ("\t".join(["1", *["3"] * 13, *["68fd1e64"] * 26]) + "\n").encode()

CASES = [
    # --- data.files / data.holdout_files (given data) ---
    Bad("files-scalar-not-list-or-mapping", _run(),
        r"^exp\.yaml: data\.files: must be a list of files or globs, or a mapping of format to them \(keys libsvm, "
        r"tfrecord, packed\), not int 5$", _files("  files: 5\n"), out="out", code=1),
    Bad("unknown-preset-refused-before-data-is-made", _run(), r"^exp\.yaml: pipelines\.presets\[1\]: unknown preset "
        r"'nosuch' \(known: aws-sample, lambdaji-libsvm, guide\)$",
        make=_experiment(extra="pipelines: {presets: [aws-sample, nosuch]}\n")),
    Bad("files-empty-list", _run(), r"^exp\.yaml: data\.files: an empty list; give a list of files .*keys libsvm",
        _files("  files: []\n"), out="out", code=1),
    Bad("files-list-matches-nothing", _run(), r"^exp\.yaml: data\.files\[1\]: pattern 'nope/\*\.libsvm' matches no file$",
        _files("  files: [a.libsvm, nope/*.libsvm]\n", **{"a.libsvm": LIBSVM_ROWS}), out="out", code=1),
    Bad("files-list-of-raw-criteo", _run(),
        r"^exp\.yaml: data\.files: train\.txt is raw Criteo text; convert it first: pipebench convert --from criteo",
        _files("  files: [train.txt]\n", **{"train.txt": RAW_CRITEO}), out="out", code=1),
    Bad("files-list-of-s3", _run(), r"^exp\.yaml: data\.files: 's3://b/x': an s3:// file's format cannot be told "
        r"from here; write data\.files as a mapping of format to files \(keys libsvm, tfrecord, packed\)$",
        _files("  files: ['s3://b/x']\n"), out="out", code=1),
    Bad("files-mapping-unknown-format", _run(),
        r"^exp\.yaml: data\.files\.csv: unknown key \(expected one of libsvm, tfrecord, packed\)$",
        _files("  files: {csv: [a.csv]}\n"), out="out", code=1),
    Bad("files-manifest-not-json", _run(), r"^d/manifest\.json:1: not valid JSON: ", _with_manifest(b"{oops"),
        out="out", code=1),
    Bad("files-manifest-no-version", _run(), r"^d/manifest\.json: not a converter manifest \(no schema_version\)$",
        _with_manifest(b'{"shards": 5}'), out="out", code=1),
    Bad("files-manifest-newer", _run(), r"^d/manifest\.json: schema_version 2 was written by a newer pipebench "
        r"\(this one reads 1\): update pipebench$", _with_manifest(_manifest(schema_version=2)), out="out", code=1),
    Bad("files-manifest-rows-not-a-number", _run(), r"^d/manifest\.json: shards\[0\]\.rows: must be int, not str "
        r"'ten'$", _with_manifest(_manifest(shards=[{"name": "a.libsvm", "rows": "ten", "bytes": 22, "sha256": "0"}])),
        out="out", code=1),
    Bad("files-list-by-set", _run("--set", "data.files=5"), r"^--set data\.files: must be a list of files or globs",
        _experiment(), out="out", code=1),
    Bad("quality-without-holdout-files", _run("--set", "quality.enabled=true"),
        r"^--set quality\.enabled: the quality guard needs held-out rows: with data\.files, list files of rows not "
        r"trained on in data\.holdout_files$", _files("  files: [a.libsvm]\n", **{"a.libsvm": LIBSVM_ROWS}),
        out="out", code=1),
    Bad("quality-in-the-file-without-holdout-files", _run(),
        r"^exp\.yaml: quality\.enabled: the quality guard needs held-out rows",
        lambda folder: (_files("  files: {libsvm: [a.libsvm]}\n", **{"a.libsvm": LIBSVM_ROWS})(folder),
                        (folder / "exp.yaml").write_text((folder / "exp.yaml").read_text() + "quality: {enabled: true}\n")),
        out="out", code=1),
    Bad("quality-without-holdout-rows", _run("--set", "quality.enabled=true", "--set", "data.holdout_rows=0"),
        r"^--set data\.holdout_rows: 0 leaves quality\.enabled without held-out rows", _experiment(), out="out", code=1),
    Bad("holdout-files-without-files", _run(), r"^exp\.yaml: data\.holdout_files: held-out rows of data\.files; "
        r"synthetic data makes its own \(data\.holdout_rows\)$", _files("  holdout_files: [a.libsvm]\n",
                                                                          **{"a.libsvm": LIBSVM_ROWS}), out="out", code=1),
    # --- numbers: NaN, infinity, out of range (experiment files) ---
    Bad("window_sec-nan", _run(), r"^exp\.yaml: measurement\.window_sec: must be a finite number \(at least 0\.05\), "
        r"not nan$", _experiment("window_sec: 0.2", "window_sec: .nan"), out="out", code=1),
    Bad("sample_hz-inf", _run(), r"^exp\.yaml: measurement\.sample_hz: must be a finite number .*not inf$",
        _experiment("sample_hz: 4", "sample_hz: .inf"), out="out", code=1),
    Bad("sample_hz-too-high", _run(), r"^exp\.yaml: measurement\.sample_hz: must be in \[0\.5, 100\], not 100000\.0$",
        _experiment("sample_hz: 4", "sample_hz: 100000.0"), out="out", code=1),
    Bad("dropout-above-1", _run(), r"^exp\.yaml: model\.dropout: must be in \[0, 1\), not 1\.5$",
        _experiment("dropout: 0.5", "dropout: 1.5"), out="out", code=1),
    Bad("learning-rate-negative", _run(), r"^exp\.yaml: model\.learning_rate: must be above 0, not -0\.001$",
        _experiment("learning_rate: 0.001", "learning_rate: -0.001"), out="out", code=1),
    Bad("learning-rate-nan", _run(), r"^exp\.yaml: model\.learning_rate: must be a finite number \(above 0\), not nan$",
        _experiment("learning_rate: 0.001", "learning_rate: .NaN"), out="out", code=1),
    Bad("max-failure-rate-above-1", _run(), r"^exp\.yaml: budget\.max_failure_rate: must be in \[0, 1\], not 2\.0$",
        _experiment("max_failure_rate: 0.5", "max_failure_rate: 2.0"), out="out", code=1),
    Bad("positive-rate-1", _run(), r"^exp\.yaml: data\.synth\.positive_rate: must be in \(0, 1\), not 1$",
        _experiment("files: 1}", "files: 1, positive_rate: 1}"), out="out", code=1),
    Bad("int-as-float", _run(), r"^exp\.yaml: data\.synth\.rows: must be int, not float 200\.5$",
        _experiment("rows: 200", "rows: 200.5"), out="out", code=1),
    Bad("int-beyond-64-bits", _run(), r"^exp\.yaml: data\.synth\.rows: must fit in 64 bits, not 1000000000000",
        _experiment("rows: 200", "rows: " + "1" + "0" * 30), out="out", code=1),
    # --- YAML that is no experiment ---
    Bad("duplicate-top-key", _run(), r"^exp\.yaml:14: duplicate key 'name'$",
        _experiment(extra="name: other\n"), out="out", code=1),
    Bad("duplicate-nested-key", _run(), r"^exp\.yaml:11: duplicate key 'window_sec'$",
        _experiment("  sample_hz: 4", "  window_sec: 5"), out="out", code=1),
    Bad("duplicate-key-in-flow-mapping", _run(), r"^exp\.yaml:5: duplicate key 'rows'$",
        _experiment("files: 1}", "rows: 1}"), out="out", code=1),
    Bad("binary-not-utf8", _run(), r"^exp\.yaml:2: not UTF-8 text \(byte 0xff\)$",
        _file("exp.yaml", b"name: tiny\nresults: \xff\xfe out\n"), out="out", code=1),
    Bad("binary-nul", _run(), r"^exp\.yaml:3: holds a NUL byte: not a text file$",
        _file("exp.yaml", b"name: tiny\nresults: out\n\x00\x01\x02"), out="out", code=1),
    Bad("control-character", _run(), r"^exp\.yaml:2: not valid YAML: character U\+0007 is not allowed$",
        _file("exp.yaml", "name: tiny\nresults: out\x07\n"), out="out", code=1),
    Bad("empty-file", _run(), r"^exp\.yaml: empty: an experiment needs at least `name: \.\.\.`$",
        _file("exp.yaml", "# nothing yet\n"), code=1),
    Bad("list-document", _run(), r"^exp\.yaml: the experiment must be a mapping, not list$",
        _file("exp.yaml", "- name: tiny\n"), code=1),
    Bad("scalar-document", _run(), r"^exp\.yaml: the experiment must be a mapping, not str$",
        _file("exp.yaml", "just some words\n"), code=1),
    Bad("python-object-tag", _run(), r"^exp\.yaml:1: not valid YAML: could not determine a constructor for the tag "
        r"'tag:yaml\.org,2002:python/object/apply:os\.system'", _file(
            "exp.yaml", "name: !!python/object/apply:os.system ['mkdir pwned']\nresults: out\n"), out="pwned", code=1),
    Bad("unknown-key", _run(), r"^exp\.yaml: measurement\.window_secs: unknown key \(expected one of warmup_max_sec, ",
        _experiment("window_sec: 0.2", "window_secs: 0.2"), out="out", code=1, process=True),
    Bad("wrong-type", _run(), r"^exp\.yaml: budget\.max_failure_rate: must be float, not str 'half'$",
        _experiment("max_failure_rate: 0.5", "max_failure_rate: half"), out="out", code=1),
    Bad("missing-file", _run(), r"^exp\.yaml: cannot read: No such file or directory$", code=1),
    # --- hostile YAML: refused at load, in memory that does not grow with what it would expand to ---
    Bad("billion-laughs-in-an-echoed-value", _run(), r"^exp\.yaml:1: aliases expand this to more than 1,000,000 "
        r"values$", _experiment("name: tiny", "name: " + _laughs()), out="out", code=1, memory_mb=1024,
        timeout_sec=60),
    Bad("billion-laughs-by-set", _run("--set", "name=" + _laughs()), r"^--set name: aliases expand this to more "
        r"than 1,000,000 values$", _experiment(), out="out", code=1, memory_mb=1024, timeout_sec=60),
    Bad("alias-inside-its-own-node", _run(), r"^exp\.yaml:1: an alias refers to a node that holds it$",
        _experiment("name: tiny", "name: &n [*n]"), out="out", code=1),
    Bad("nested-10000-deep", _run(), r"^exp\.yaml:1: nested more than 100 levels deep$",
        _experiment("name: tiny", "name: " + "[" * 10_000 + "]" * 10_000), out="out", code=1),
    Bad("timestamp-that-is-no-date", _run(), r"^exp\.yaml:1: cannot read '2001-13-01' as timestamp: month must be "
        r"in 1\.\.12$", _experiment("name: tiny", "name: 2001-13-01"), out="out", code=1),
    Bad("integer-of-5000-digits", _run(), r"^exp\.yaml:5: cannot read '1{39}… \(5,000 characters\) as int",
        _experiment("rows: 200", "rows: " + "1" * 5000), out="out", code=1),
    Bad("experiment-over-the-size-cap", _run(), r"^exp\.yaml: larger than 1,048,576 bytes, the most a YAML file "
        r"pipebench reads may hold \(an experiment file is a few KB\)$",
        _experiment(extra="bogus: 1\n" + "#" * (2 << 20) + "\n"), out="out", code=1),
    Bad("experiment-endless-stream", ("run", "/dev/zero"), r"^/dev/zero: larger than 1,048,576 bytes", code=1,
        memory_mb=1024, timeout_sec=60),
    # --- names that are not one folder under results/ ---
    Bad("name-parent-dirs", _run(), r"^exp\.yaml: name: must be a plain folder name \(1 to 100 letters, digits, "
        r"'\.', '_' or '-', the first a letter or digit\), not '\.\./\.\.'$",
        _experiment("name: tiny", "name: ../.."), out="out", code=1),
    Bad("name-absolute", _run(), r"^exp\.yaml: name: must be a plain folder name .*, not '/tmp/elsewhere'$",
        _experiment("name: tiny", "name: /tmp/elsewhere"), out="out", code=1),
    Bad("name-backslash", _run(), r"^exp\.yaml: name: must be a plain folder name .*, not 'a\\\\b'$",
        _experiment("name: tiny", r"name: 'a\b'"), out="out", code=1),
    Bad("name-dot", _run(), r"^exp\.yaml: name: must be a plain folder name .*, not '\.'$",
        _experiment("name: tiny", "name: '.'"), out="out", code=1),
    Bad("name-too-long", _run(), r"^exp\.yaml: name: must be a plain folder name .*, not 'xxxx.*… \(101 characters\)$",
        _experiment("name: tiny", "name: " + "x" * 101), out="out", code=1),
    # --- blocks other modules check, now checked when the file loads ---
    Bad("space-nan-choice", _run(), r"^exp\.yaml: search\.space\.batch_size\[1\]: must be a finite number, not nan$",
        _experiment(extra="search: {driver: optuna, space: {batch_size: [64, .nan]}}\n"), out="out", code=1),
    Bad("space-negative-threads", _run(),
        r"^exp\.yaml: search\.space\.intra_op_threads\.low: must be at least 0, not -2$",
        _experiment(extra="search: {driver: optuna, space: {intra_op_threads: {low: -2, high: 4}}}\n"),
        out="out", code=1),
    Bad("orderings-nan-batch-size", _run(), r"^exp\.yaml: pipelines\.orderings\.stages\[0\]\.batch\.batch_size: must "
        r"be an integer ≥ 1, not nan$",
        _experiment(extra="pipelines:\n  orderings: {source: {format: libsvm}, stages: [batch: .nan, decode]}\n"),
        out="out", code=1),
    # --- --set values get the same checks, and errors name the --set key ---
    Bad("set-without-equals", _run("--set", "measurement.windows"),
        r"^--set 'measurement\.windows': expected KEY=VALUE", _experiment(), out="out", code=1),
    Bad("set-unknown-key", _run("--set", "measurement.windws=3"),
        r"^--set measurement\.windws: unknown key \(expected one of ", _experiment(), out="out", code=1),
    Bad("set-through-a-scalar", _run("--set", "model.dropout.rate=0.1"),
        r"^--set model\.dropout\.rate: model\.dropout is a float, not a mapping$", _experiment(), out="out", code=1),
    Bad("set-nan", _run("--set", "measurement.window_sec=.nan"),
        r"^--set measurement\.window_sec: must be a finite number \(at least 0\.05\), not nan$",
        _experiment(), out="out", code=1),
    Bad("set-out-of-range", _run("--set", "model.dropout=1"), r"^--set model\.dropout: must be in \[0, 1\), not 1$",
        _experiment(), out="out", code=1),
    Bad("set-duplicate-key", _run("--set", "data.synth={{rows: 10, rows: 20}}"),
        r"^--set data\.synth: duplicate key 'rows'$", _experiment(), out="out", code=1),
    Bad("set-name-escapes-results", _run("--set", "name=../../x"),
        r"^--set name: must be a plain folder name .*, not '\.\./\.\./x'$", _experiment(), out="out", code=1),
    Bad("quick-item-names-its-place", _run("--quick"), r"^exp\.yaml: quick\[1\]: budget\.max_failure_rate: must be "
        r"in \[0, 1\], not -1$", _experiment(extra="quick: [measurement.windows=2, budget.max_failure_rate=-1]\n"),
        out="out", code=1),
    # --- spec files given to pipelines list / export ---
    Bad("list-duplicate-key", ("pipelines", "list", "spec.yaml"), r"^spec\.yaml:3: duplicate key 'seed'$",
        _spec("seed: 7}", "seed: 7, seed: 8}"), code=1),
    Bad("list-binary", ("pipelines", "list", "spec.yaml"), r"^spec\.yaml:1: not UTF-8 text \(byte 0x89\)$",
        _file("spec.yaml", b"\x89PNG\r\n\x1a\n\x00"[:4] + b"\n"), code=1),
    Bad("list-list-document", ("pipelines", "list", "spec.yaml"), r"^spec\.yaml: pipeline: must be a mapping, not list$",
        _file("spec.yaml", "- source\n- stages\n"), code=1),
    Bad("export-nan-batch-size", ("pipelines", "export", "spec.yaml", "--out", "m.py"),
        r"^spec\.yaml: pipeline\.stages\[1\]\.batch\.batch_size: must be an integer ≥ 1, not nan$",
        _spec("batch_size: 64", "batch_size: .nan"), out="m.py", code=1),
    Bad("export-huge-buffer", ("pipelines", "export", "spec.yaml", "--out", "m.py"),
        r"^spec\.yaml: pipeline\.stages\[0\]\.shuffle\.buffer_size: must be an integer ≥ 1 that fits in 64 bits, "
        r"not 1000", _spec("buffer_size: 1000", "buffer_size: 1" + "0" * 25), out="m.py", code=1),
    Bad("export-nul", ("pipelines", "export", "spec.yaml", "--out", "m.py"), r"^spec\.yaml:2: holds a NUL byte",
        _file("spec.yaml", SPEC.replace("stages:", "stages:\x00")), out="m.py", code=1),
    Bad("export-into-missing-folder", ("pipelines", "export", "spec.yaml", "--out", "no/such/m.py"),
        r"^no/such/m\.py: cannot write: No such file or directory$", _spec(), code=2),
    Bad("export-over-its-own-spec", ("pipelines", "export", "spec.yaml", "--out", "spec.yaml", "--force"),
        r"^spec\.yaml: is the spec being exported; write the module elsewhere$", _spec(), code=2),
    Bad("export-to-a-folder", ("pipelines", "export", "spec.yaml", "--out", ".", "--force"),
        r"^\.: is a folder; --out names the \.py file to write$", _spec(), code=2),
]


@pytest.mark.parametrize("case", cases(CASES))
def test_refused(case, tmp_path, run_case):
    run_case(case, tmp_path)
