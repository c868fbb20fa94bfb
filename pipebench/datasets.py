"""An experiment's data, materialised once: synthetic rows made and converted, cached by fingerprint.

A synth spec becomes `<cache_dir>/<fingerprint>/` holding `libsvm/`, `tfrecord/`, `packed/` and a
held-out split (`holdout-tfrecord/`, other rows of the same planted model) for the quality guard.
Existing files (`data.files`) are used as they are (`s3://` URIs too: a SageMaker Pipe-mode job has
no local copy); a format the pipelines read that is not given is converted once from a given local
one into `<cache_dir>/files-<fingerprint>/<format>/`, and held-out files (`data.holdout_files`) that
are libsvm become TFRecord there too, since the quality guard reads TFRecord. Their rows are counted
once, here, and recorded in data.json for everything after. Either way the data fingerprint hashes
what the trials read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipebench.converters import MANIFEST
from pipebench.converters.manifest import read_manifest
from pipebench.atomic import atomic_dir
from pipebench.config import Experiment
from pipebench.data_files import REMOTE_PREFIX, by_format, matches
from pipebench.errors import ConfigError, OutputFolderError
from pipebench.fingerprint import fingerprint
from pipebench.synth_facts import SYNTH_FILE, SynthFacts
from pipebench.typed import to_json
from pipebench.versioned import load_versioned

_LAYOUT_VERSION = 1
#: data.json layout.
DATA_VERSION = 1


@dataclass(frozen=True)
class DataFacts:
    """What a run folder's data.json says about the data its trials read (the summary and checklist read it)."""

    schema_version: int  # the layout version (pipebench.versioned); absent before 2026-11-26: layout 1
    source: str  # "synthetic" (made from data.synth) or "files" (data.files)
    fingerprint: str
    rows: int | None  # training rows in one epoch; None when nothing could count them
    rows_from: str  # how `rows` is known: the synthesizer, the converter's manifest, counted, or why unknown
    formats: tuple[str, ...]
    files: dict[str, int]  # format → how many files
    oracle_auc: float | None  # the planted model's AUC (synthetic data only)

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> DataFacts:
        return load_versioned(cls, path, DATA_VERSION, "a data description",
                              f"run `pipebench upgrade {Path(path).parent}`", absent=1)


@dataclass(frozen=True)
class DataSet:
    """Files per format (and the held-out split), with what trials need to know about them."""

    files: dict[str, list[str]]
    holdout: dict[str, list[str]] = field(default_factory=dict)
    field_size: int = 39
    feature_size: int = 117581
    rows: int | None = None
    oracle_auc: float | None = None
    fingerprint: str = ""
    folder: Path | None = None
    rows_from: str = "the synthesizer"

    def facts(self) -> DataFacts:
        """Give what a run folder records about this data."""
        return DataFacts(DATA_VERSION, "files" if self.folder is None else "synthetic", self.fingerprint, self.rows, self.rows_from,
                         tuple(self.files), {fmt: len(files) for fmt, files in self.files.items()}, self.oracle_auc)


def _digest(obj: object) -> str:
    return fingerprint(obj)


def _synth_key(experiment: Experiment) -> str:
    data = experiment["data"]
    return _digest({"layout": _LAYOUT_VERSION, "synth": data["synth"], "holdout_rows": data["holdout_rows"],
                    "rows_per_record": data["rows_per_record"], "formats": sorted(data["formats"])})


def _make(folder: Path, experiment: Experiment) -> None:
    from pipebench.converters.convert import ConvertRequest, convert
    from pipebench.synth import SynthSpec, synthesize

    synth = experiment["data"]["synth"]
    rows_per_record = experiment["data"]["rows_per_record"]
    common = dict(seed=synth["seed"], field_size=synth["field_size"], feature_size=synth["feature_size"],
                  positive_rate=synth["positive_rate"])
    synthesize(SynthSpec(rows=synth["rows"], out=folder / "libsvm", files=synth["files"], **common))
    texts = tuple(sorted((folder / "libsvm").glob("part-*")))
    for fmt in sorted(set(experiment["data"]["formats"]) - {"libsvm"}):
        convert(ConvertRequest(inputs=texts, out=folder / fmt, format=fmt, field_size=synth["field_size"],
                               feature_size=synth["feature_size"], shards=synth["files"],
                               rows_per_record=rows_per_record))
    holdout_rows = experiment["data"]["holdout_rows"]
    if holdout_rows:
        synthesize(SynthSpec(rows=holdout_rows, out=folder / "holdout-libsvm", stream=1, **common))
        convert(ConvertRequest(inputs=tuple(sorted((folder / "holdout-libsvm").glob("part-*"))),
                               out=folder / "holdout-tfrecord", field_size=synth["field_size"]))


def _folder_files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.glob("part-*"))


def _content_fingerprint(files: dict[str, list[str]], manifests: dict[str, str] | None = None) -> str:
    """Hash the manifests' shard checksums, or file names and sizes where there is no manifest.

    A manifest named in `manifests` (per format) stands for files that have none beside them; an
    `s3://` file with no manifest at all contributes its name only (there is nothing local to stat).
    """
    parts = []
    read: dict[Path, dict[str, str] | None] = {}  # one manifest covers a whole folder: read it once
    for fmt in sorted(files):
        for name in files[fmt]:
            manifest = Path((manifests or {}).get(fmt) or Path(name).parent / MANIFEST)
            if manifest not in read:
                read[manifest] = ({s.name: s.sha256 for s in read_manifest(manifest).shards}
                                  if manifest.exists() else None)
            shards = read[manifest]
            if shards is not None:
                parts.append((fmt, Path(name).name, shards.get(Path(name).name)))
            elif name.startswith(REMOTE_PREFIX):
                parts.append((fmt, name, None))
            else:
                parts.append((fmt, name, Path(name).stat().st_size))
    return _digest(parts)


def _manifest_rows(names: list[str], manifest: Path) -> int | None:
    """Give the rows the converter's manifest lists for exactly these files, or None if it does not list them all."""
    if not manifest.exists():
        return None
    shards = {s.name: s.rows for s in read_manifest(manifest).shards}
    found = [shards.get(Path(name).name) for name in names]
    return None if None in found else sum(found)


def count_rows(files: dict[str, list[str]], manifests: dict[str, str] | None = None) -> tuple[int | None, str]:
    """Give the training rows of given data files once, and how they were known.

    Every format holds the same rows, so the cheapest is asked: a converter's manifest, else the
    lines of libsvm text, else the records of TFRecord files (packed records hold several rows,
    which only their manifest says).
    """
    for fmt, names in sorted(files.items()):
        manifest = Path((manifests or {}).get(fmt) or Path(names[0]).parent / MANIFEST)
        if not any(n.startswith(REMOTE_PREFIX) for n in names):
            rows = _manifest_rows(names, manifest)
            if rows is not None:
                return rows, f"the converter's manifest ({manifest})"
    for fmt in ("libsvm", "tfrecord"):
        names = files.get(fmt) or []
        if names and not any(n.startswith(REMOTE_PREFIX) for n in names):
            from pipebench.converters import tfrecord
            from pipebench.converters.inputs import InputFile

            total = 0
            for name in names:
                with InputFile(Path(name), hash=False) as stream:  # decompressed, with one-line errors for damaged files
                    if fmt == "tfrecord":
                        total += sum(len(records) for _, records in tfrecord.record_batches(stream))
                        continue
                    last = b"\n"
                    for block in iter(lambda: stream.read(1 << 22), b""):
                        total += block.count(b"\n")
                        last = block[-1:]
                    total += last != b"\n"  # a last line without its newline is still a row
            return total, f"counted ({fmt} {'records' if fmt == 'tfrecord' else 'lines'})"
    return None, "unknown: remote or packed files without a manifest (pass --epoch-examples to the checklist)"


def _convert_once(sources: list[str], fmt: str, out: Path, experiment: Experiment, field_size: int, log) -> list[str]:
    """Give the files of `sources` converted to `fmt` in `out`, converting only if `out` has no manifest yet."""
    from pipebench.converters.convert import ConvertRequest, convert

    if not (out / MANIFEST).exists():
        log(f"converting {len(sources)} file(s) to {fmt} in {out} (cached for later runs)")
        try:
            convert(ConvertRequest(inputs=tuple(Path(s) for s in sources), out=out, format=fmt,
                                   field_size=field_size, shards=len(sources),
                                   rows_per_record=experiment["data"]["rows_per_record"], force=True))
        except OutputFolderError as err:
            raise ConfigError(f"data.cache_dir: {out}: cannot create the data folder ({err.why})") from None
    return _folder_files(out)


def _given(experiment: Experiment, log) -> DataSet:
    """Give the data set of `data.files` (and `data.holdout_files`), converting missing formats once."""
    data = experiment["data"]
    files, manifests = {}, {}
    for fmt, patterns in data["files"].items():
        if not patterns:
            continue
        # s3:// entries are taken as they are: in SageMaker Pipe mode the job streams them, with no local copy.
        found, named = matches(patterns, f"data.files.{fmt}")
        if len(named) > 1:
            raise ConfigError(f"data.files.{fmt}: {len(named)} {MANIFEST} files match {patterns}; give one")
        files[fmt] = found
        manifests.update({fmt: named[0]} if named else {})
    rows, rows_from = count_rows(files, manifests)
    described = _described(files, manifests)
    field_size = described.get("field_size") or data["synth"]["field_size"]
    feature_size = described.get("feature_size") or data["synth"]["feature_size"]
    # the given files are the data's identity: formats made from them below add nothing to it, so a run
    # reading only some formats (a SageMaker job narrowed to one) has the fingerprint of a local run
    fingerprint = _content_fingerprint(files, manifests)
    made = Path(data["cache_dir"]) / f"files-{fingerprint}"
    local = [fmt for fmt in ("libsvm", "tfrecord") if fmt in files
             and not any(f.startswith(REMOTE_PREFIX) for f in files[fmt])]
    for fmt in sorted(experiment.read_formats() - set(files)):
        if not local:
            raise ConfigError(f"data.files: the pipelines read {fmt} and no local libsvm or TFRecord files are given "
                              f"to make it from; make it with pipebench convert FILE... --format {fmt} --out DIR "
                              f"and list DIR/part-* under data.files.{fmt}")
        files[fmt] = _convert_once(files[local[0]], fmt, made / fmt, experiment, field_size, log)
    holdout = {}
    if data["holdout_files"]:
        held = by_format(data["holdout_files"], "data.holdout_files")
        if set(held) - {"libsvm", "tfrecord"}:
            raise ConfigError(f"data.holdout_files: {held[min(set(held) - {'libsvm', 'tfrecord'})][0]} is packed; the "
                              "quality guard reads TFRecord or libsvm (pipebench convert --format tfrecord)")
        holdout["tfrecord"] = held.get("tfrecord") or _convert_once(
            held["libsvm"], "tfrecord", made / f"holdout-{_digest(held)}", experiment, field_size, log)
    return DataSet(files, holdout, field_size, feature_size, rows=rows,
                   fingerprint=fingerprint, rows_from=rows_from)


def _described(files: dict[str, list[str]], manifests: dict[str, str]) -> dict:
    """Give field_size and feature_size from a converter manifest of the given files (a raw Criteo map sets
    feature_size), or {} when none says."""
    for fmt, names in sorted(files.items()):
        manifest = Path(manifests.get(fmt) or Path(names[0]).parent / MANIFEST)
        if names[0].startswith(REMOTE_PREFIX) or not manifest.exists():
            continue
        described = read_manifest(manifest)
        if described.feature_size:
            return {"field_size": described.field_size, "feature_size": described.feature_size}
    return {}


def _synth_description(folder: Path) -> SynthFacts:
    """Give what the synthesizer recorded about a cached data folder (rows, oracle AUC); DataError if damaged."""
    return SynthFacts.load(folder / "libsvm" / SYNTH_FILE, f"remove {folder} to make the data again")


def materialise(experiment: Experiment, log=print) -> DataSet:
    """Give the experiment's data set, making (once) and caching synthetic data when asked."""
    data = experiment["data"]
    if any(data["files"].values()):
        return _given(experiment, log)
    folder = Path(data["cache_dir"]) / _synth_key(experiment)
    if not (folder / "libsvm" / SYNTH_FILE).exists():
        log(f"making synthetic data ({data['synth']['rows']:,} rows) in {folder} (cached for later runs)")
        try:
            with atomic_dir(folder, force=True) as tmp:
                _make(tmp, experiment)
        except OutputFolderError as err:
            raise ConfigError(f"data.cache_dir: {folder}: cannot create the data folder ({err.why})") from None
    described = _synth_description(folder)
    files = {fmt: _folder_files(folder / fmt) for fmt in ("libsvm", *sorted(set(data["formats"]) - {"libsvm"}))}
    holdout = {"tfrecord": _folder_files(folder / "holdout-tfrecord")} if (folder / "holdout-tfrecord").exists() else {}
    synth = data["synth"]
    return DataSet(files, holdout, synth["field_size"], synth["feature_size"], described.rows,
                   described.oracle_auc, _content_fingerprint(files), folder)
