"""The diagnose corpus's data and helpers: one small synthetic data set in libsvm, TFRecord and raw Criteo text,
shared; the corpus written here (tests/diagnose_corpus) and the one taken from public repositories (its real/)."""
from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

CORPUS = Path(__file__).parent / "diagnose_corpus"
REAL_CORPUS = CORPUS / "real"
#: The corpus pipelines written here (tf1_tensors.py returns a TF1 iterator's tensors: captured too).
PIPELINES = ("lambdaji_libsvm", "parse_single", "many_files", "py_function", "augment", "dict_features", "well_built",
             "cached")
#: The input_fns taken from public repositories (tests/diagnose_corpus/real/README.md).
REAL = tuple(sorted(p.stem for p in REAL_CORPUS.glob("real_*.py")))
ROWS = 3000
#: A measuring call's length in the tests' diagnoses (pipebench.measure.windows.CALL_SEC is 0.1 s): they check
#: what diagnose builds, reads and writes, never its figures, and a diagnosis is mostly calls (calibrating,
#: settling, timing: 22 of 41 s for real_submarine_libsvm).
TEST_CALL_SEC = 0.02


def make_data(folder: Path) -> dict[str, list[str]]:
    """Write the same synthetic rows as libsvm (3 files), TFRecord (12 small files; and 4 gzip files), raw Criteo
    (3); give each format's files."""
    from pipebench.synth import SynthSpec, synthesize

    found = {}
    for fmt, files, compression in (("libsvm", 3, "none"), ("tfrecord", 12, "none"), ("criteo", 3, "none"),
                                    ("tfrecord", 4, "gzip")):
        key = fmt if compression == "none" else f"{fmt}-{compression}"
        described = synthesize(SynthSpec(rows=ROWS, out=folder / key, files=files, format=fmt, feature_size=5000,
                                         seed=7, compression=compression))
        found[key] = [str(folder / key / f.name) for f in described.files]
    return found


def data_key(found: dict) -> str:
    """Give the data a CASE reads: its format, and its compression when not none ("tfrecord-gzip")."""
    return found["format"] + (f"-{found['compression']}" if found.get("compression", "none") != "none" else "")


def path_of(name: str) -> Path:
    """Give a corpus module's file, written here or real."""
    return (REAL_CORPUS if name.startswith("real_") else CORPUS) / f"{name}.py"


def case(name: str) -> dict:
    """Give a corpus module's CASE (its format, files argument and other arguments), read without importing TF."""
    import ast

    tree = ast.parse(path_of(name).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "CASE":
            return ast.literal_eval(node.value)
    raise KeyError(name)


def kwargs_of(name: str, data: dict[str, list[str]]) -> dict:
    """Give the arguments a corpus pipeline is diagnosed with: its CASE's, its files filled in."""
    found = case(name)
    return {found["files"]: derived(name, found, data[data_key(found)]), **found["kwargs"]}


def derived(name: str, found: dict, files: list[str]) -> list[str]:
    """Give the files a CASE reads: the synthetic format's, or (`"derived": FUNCTION`) what the module's own FUNCTION
    writes from them (wiring: a reader of a layout pipebench does not synthesise, such as companion binary files),
    written once beside them."""
    if "derived" not in found:
        return files
    folder = Path(files[0]).parent.parent / f"derived-{name}"
    done = folder / ".files.txt"
    if not done.exists():
        folder.mkdir(parents=True, exist_ok=True)
        made = getattr(import_file(path_of(name), f"derive_{name}"), found["derived"])(list(files), str(folder))
        done.write_text("\n".join(made))
    return done.read_text().splitlines()


def import_file(path: Path, name: str):
    """Import a module from a file under `name` (a fresh module each time)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def exported(found, rewrite, folder: Path, kwargs: dict):
    """Give the dataset the export of `rewrite` (the best kept one when None) builds: the module pipebench writes,
    imported as a user would and called with `kwargs`; None when it writes no module (which says why)."""
    from pipebench.diagnose.export import write

    folder.mkdir(parents=True, exist_ok=True)
    made = write(found, folder, Path(found.function.rpartition(":")[0]).read_text(), rewrite)
    if made.module is None:
        assert made.why_not, "a module not written says why"
        return None
    module = import_file(folder / made.module, f"exported_{abs(hash(str(folder)))}")
    return module.input_fn(**kwargs)


@contextlib.contextmanager
def short_calls() -> Iterator[None]:
    """Measure with TEST_CALL_SEC calls while the block runs (the diagnoses run in the test process)."""
    import pytest

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("pipebench.measure.windows.CALL_SEC", TEST_CALL_SEC)
        yield
