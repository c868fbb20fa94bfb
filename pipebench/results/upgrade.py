"""`pipebench upgrade RUN_DIR...`: rewrite a run folder of an older pipebench in the current layout.

What a folder of pipebench 0.1.0 (results schema v2, machine.json layout 1, no data.json) gets:
tables rewritten at the current schema version (columns added since are null in its rows),
machine.json in layout 2, and data.json built from what the folder knew (its resolved config and
the trials' data fingerprint; the rows of `data.files` were never recorded, so they stay unknown).
A folder written before 2026-11-26 gets its JSON records' version key spelt the one way
(pipebench.versioned.VERSION_KEY: `facts_version`, `profile_version`, `sharding_version`, and a collected
member's job.json `job_version` (until 2026-11-27) become `schema_version`; data.json, which had none, gets layout 1's). Every file is replaced atomically,
and only with what reads back; a folder already current is left as it is.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pipebench.atomic import atomic_write_json
from pipebench.results.stage_costs import PROFILE_FILE, PROFILE_VERSION, CapacityProfiles
from pipebench.datasets import DATA_VERSION, DataFacts
from pipebench.errors import DataError
from pipebench.measure.facts import FACTS_VERSION, MachineFacts, upgrade_v1
from pipebench.results import CONFIG_FILE, DATA_FILE, MACHINE_FILE, SAMPLES_FILE, TRIALS_FILE
from pipebench.results.job import JOB_FILE, job_record
from pipebench.results.schema import SAMPLE_SCHEMA, SCHEMA_VERSION, TRIAL_SCHEMA
from pipebench.results.store import read_table, table_version, write_table
from pipebench.typed import from_json, read_json
from pipebench.versioned import VERSION_KEY, WAS, respelt, spelt
from pipebench.yamlfile import read_yaml

#: The run folder's JSON records whose version key older pipebench spelt otherwise (or left out), with the
#: version a file without one has (None: such a file is not one of ours, and its reader says so), and
#: what reads the respelt document back before it is written.
_RESPELT = (
    (DATA_FILE, DATA_VERSION, lambda found, where: from_json(DataFacts, found, where)),
    (PROFILE_FILE, None, lambda found, where: from_json(CapacityProfiles, found, where)
     if found[VERSION_KEY] == PROFILE_VERSION else None),
    ("sharding.json", None, None),  # checked when read (pipebench.sharding.record)
    (JOB_FILE, None, job_record),  # a collected folder's member: the job that ran it
)


def _respell(path: Path, absent: int | None, check) -> str | None:
    """Rewrite the JSON record at `path` with its version under VERSION_KEY; give what changed, or None."""
    found = read_json(path) if path.exists() else None
    if not isinstance(found, dict) or VERSION_KEY in found:
        return None
    old = spelt(found, VERSION_KEY, WAS.get(path.name, ()))
    if old is None and absent is None:
        return None
    upgraded = respelt(found, VERSION_KEY, WAS.get(path.name, ())) if old else {VERSION_KEY: absent, **found}
    if check is not None:
        check(upgraded, str(path))  # refuse to write what could not be read back
    atomic_write_json(path, upgraded, allow_nan=False)
    return f"{path.name} ({old} → {VERSION_KEY})" if old else f"{path.name} ({VERSION_KEY} {absent} added)"


def _mapping(found: Any, where: str) -> dict:
    """Give `found` (None: empty) if it is a mapping; DataError naming `where` otherwise."""
    if found is None:
        return {}
    if not isinstance(found, dict):
        raise DataError(f"{where}: must be a mapping, not {type(found).__name__}")
    return found


def _data_facts(run_dir: Path, trials) -> DataFacts:
    path = run_dir / CONFIG_FILE
    config = _mapping(read_yaml(path) if path.exists() else None, str(path))
    data = _mapping(config.get("data"), f"{path}: data")
    given = {fmt: globs for fmt, globs in _mapping(data.get("files"), f"{path}: data.files").items() if globs}
    fingerprints = sorted({f for f in trials.column("data_fingerprint").to_pylist() if f})
    if len(fingerprints) > 1:
        raise DataError(f"{run_dir / TRIALS_FILE}: rows of {len(fingerprints)} data sets; cannot say which one "
                        f"{DATA_FILE} describes")
    fingerprint = fingerprints[0] if fingerprints else ""
    formats = tuple(given) if given else tuple(data.get("formats") or ())
    if given:
        return DataFacts(DATA_VERSION, "files", fingerprint, None, "unknown: pipebench 0.1.0 did not record the rows of data.files",
                         formats, {fmt: len(globs) for fmt, globs in given.items()}, None)
    synth = _mapping(data.get("synth"), f"{path}: data.synth")
    return DataFacts(DATA_VERSION, "synthetic", fingerprint, synth.get("rows"), "the synthesizer (data.synth.rows)", formats,
                     {fmt: int(synth.get("files") or 0) for fmt in formats}, None)


def upgrade_run_folder(run_dir: Path) -> list[str]:
    """Bring one run folder to the current layout; give what was rewritten (empty when it was current)."""
    run_dir = Path(run_dir)
    if not (run_dir / TRIALS_FILE).is_file():
        raise DataError(f"{run_dir}: no {TRIALS_FILE}; not a pipebench run folder")
    changed = []
    for name, schema in ((TRIALS_FILE, TRIAL_SCHEMA), (SAMPLES_FILE, SAMPLE_SCHEMA)):
        version = table_version(run_dir / name) if (run_dir / name).exists() else None
        if version is not None and version < SCHEMA_VERSION:
            write_table(run_dir / name, read_table(run_dir / name, schema))
            changed.append(f"{name} (schema v{version} → v{SCHEMA_VERSION})")
    machine_path = run_dir / MACHINE_FILE
    machine = read_json(machine_path)
    if isinstance(machine, dict) and spelt(machine, VERSION_KEY, WAS[MACHINE_FILE]) is None:
        upgraded = upgrade_v1(machine)
        MachineFacts.from_json(upgraded, str(machine_path))  # refuse to write what could not be read back
        atomic_write_json(machine_path, upgraded)
        changed.append(f"{MACHINE_FILE} (layout 1 → {FACTS_VERSION})")
    else:
        changed.append(_respell(machine_path, None, MachineFacts.from_json))
    if not (run_dir / DATA_FILE).exists():
        atomic_write_json(run_dir / DATA_FILE, _data_facts(run_dir, read_table(run_dir / TRIALS_FILE,
                                                                               TRIAL_SCHEMA)).to_json())
        changed.append(f"{DATA_FILE} (made from {CONFIG_FILE})")
    changed += [_respell(run_dir / name, absent, check) for name, absent, check in _RESPELT]
    return [c for c in changed if c]
