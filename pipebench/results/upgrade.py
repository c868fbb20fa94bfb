"""`pipebench upgrade RUN_DIR...`: rewrite a run folder of an older pipebench in the current layout.

What a folder of pipebench 0.1.0 (results schema v2, machine.json layout 1, no data.json) gets:
tables rewritten at the current schema version (columns added since are null in its rows),
machine.json in layout 2, and data.json built from what the folder knew (its resolved config and
the trials' data fingerprint; the rows of `data.files` were never recorded, so they stay unknown).
Every file is replaced atomically; a folder already current is left as it is.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from pipebench.atomic import atomic_write_json
from pipebench.datasets import DataFacts
from pipebench.errors import DataError
from pipebench.measure.facts import FACTS_VERSION, MachineFacts, upgrade_v1
from pipebench.results import CONFIG_FILE, DATA_FILE, MACHINE_FILE, SAMPLES_FILE, TRIALS_FILE
from pipebench.results.schema import SAMPLE_SCHEMA, SCHEMA_VERSION, TRIAL_SCHEMA, VERSION_KEY
from pipebench.results.store import read_table, write_table


def _table_version(path: Path) -> int | None:
    import pyarrow.parquet as pq

    if not path.exists():
        return None
    raw = (pq.read_schema(path).metadata or {}).get(VERSION_KEY)
    return int(raw) if raw is not None else 0


def _data_facts(run_dir: Path, trials) -> DataFacts:
    config = yaml.safe_load((run_dir / CONFIG_FILE).read_text()) if (run_dir / CONFIG_FILE).exists() else {}
    data = (config or {}).get("data") or {}
    given = {fmt: globs for fmt, globs in (data.get("files") or {}).items() if globs}
    fingerprints = sorted({f for f in trials.column("data_fingerprint").to_pylist() if f})
    if len(fingerprints) > 1:
        raise DataError(f"{run_dir / TRIALS_FILE}: rows of {len(fingerprints)} data sets; cannot say which one "
                        f"{DATA_FILE} describes")
    fingerprint = fingerprints[0] if fingerprints else ""
    formats = tuple(given) if given else tuple(data.get("formats") or ())
    if given:
        return DataFacts("files", fingerprint, None, "unknown: pipebench 0.1.0 did not record the rows of data.files",
                         formats, {fmt: len(globs) for fmt, globs in given.items()}, None)
    synth = data.get("synth") or {}
    return DataFacts("synthetic", fingerprint, synth.get("rows"), "the synthesizer (data.synth.rows)", formats,
                     {fmt: int(synth.get("files") or 0) for fmt in formats}, None)


def upgrade_run_folder(run_dir: Path) -> list[str]:
    """Bring one run folder to the current layout; give what was rewritten (empty when it was current)."""
    run_dir = Path(run_dir)
    if not (run_dir / TRIALS_FILE).is_file():
        raise DataError(f"{run_dir}: no {TRIALS_FILE}; not a pipebench run folder")
    changed = []
    for name, schema in ((TRIALS_FILE, TRIAL_SCHEMA), (SAMPLES_FILE, SAMPLE_SCHEMA)):
        version = _table_version(run_dir / name)
        if version is not None and version < SCHEMA_VERSION:
            write_table(run_dir / name, read_table(run_dir / name, schema))
            changed.append(f"{name} (schema v{version} → v{SCHEMA_VERSION})")
    machine_path = run_dir / MACHINE_FILE
    try:
        machine = json.loads(machine_path.read_text())
    except (OSError, ValueError) as err:
        raise DataError(f"{machine_path}: cannot read ({err})") from None
    if isinstance(machine, dict) and machine.get("facts_version", 1) == 1:
        upgraded = upgrade_v1(machine)
        MachineFacts.from_json(upgraded, str(machine_path))  # refuse to write what could not be read back
        atomic_write_json(machine_path, upgraded)
        changed.append(f"{MACHINE_FILE} (layout 1 → {FACTS_VERSION})")
    if not (run_dir / DATA_FILE).exists():
        atomic_write_json(run_dir / DATA_FILE, _data_facts(run_dir, read_table(run_dir / TRIALS_FILE,
                                                                               TRIAL_SCHEMA)).to_json())
        changed.append(f"{DATA_FILE} (made from {CONFIG_FILE})")
    return changed
