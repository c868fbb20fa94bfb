"""FastFile (emulated fetches) and file (warm or cold) sources: same rows as plain reads, fetches as modelled."""
from __future__ import annotations

import pytest
from lazy import lazy
from pipeline_fixtures import batches, flat

from pipebench.config import parse_experiment
from pipebench.errors import ConfigError
from pipebench.pipeline.presets import preset
from pipebench.sources.fastfile import FetchLink

build = lazy("pipebench.measure.build", "build")


def test_link_overlaps_request_latencies_and_queues_transfers():
    link = FetchLink(first_read_latency_sec=0.02, bandwidth_bytes_per_sec=1e6)
    assert link.arrival(1_000_000, asked_sec=0.0) == pytest.approx(1.02)  # latency, then 1 s of bytes
    assert link.arrival(1_000_000, asked_sec=0.0) == pytest.approx(2.02)  # asked together: waits for the link
    assert link.arrival(0, asked_sec=5.0) == pytest.approx(5.02)  # an idle link: latency only
    unlimited = FetchLink(0.05, None)
    assert unlimited.arrival(10**12, asked_sec=1.0) == pytest.approx(1.05)
    assert link.describe() == "EMULATED FastFile: 20 ms first-read latency per file, 1 MB/s shared"


def _fastfile(latency_ms: float) -> dict:
    return {"fastfile": {"first_read_latency_ms": latency_ms, "bandwidth_mb_per_sec": None}}


def _overlapping(fetches) -> bool:
    ordered = sorted(fetches, key=lambda f: f.asked_sec)
    return any(b.asked_sec < a.arrived_sec - 1e-3 for a, b in zip(ordered, ordered[1:]))  # sleeps round to µs


@pytest.mark.tf
@pytest.mark.parametrize("fmt", ["tfrecord", "libsvm"])
def test_fastfile_yields_the_file_rows_fetching_each_file_per_epoch_one_at_a_time(data, fmt):
    spec = preset("aws-sample", format=fmt, files=(data[fmt],), batch_size=100, epochs=2)
    expected = flat(batches(build(spec).dataset))
    built = build(spec.with_source(mode="fastfile"), _fastfile(100))
    assert flat(batches(built.dataset)) == expected
    fetches = built.open_hook.fetches
    assert sorted(f.path for f in fetches) == sorted(built.files * 2)  # every open fetches again, as FastFile
    assert all(f.arrived_sec - f.asked_sec >= 0.1 - 1e-6 for f in fetches)  # float sums of clock values
    assert not _overlapping(fetches)  # one reader: each file waited for in turn
    assert built.source_note == "EMULATED FastFile: 100 ms first-read latency per file, unlimited bandwidth"


@pytest.mark.tf
def test_parallel_reads_and_interleave_overlap_the_fetches(data):
    spec = preset("aws-sample", format="tfrecord", files=(data["tfrecord"],), batch_size=100, epochs=1)
    expected = flat(batches(build(spec.with_source(num_parallel_reads=2)).dataset))
    built = build(spec.with_source(mode="fastfile", num_parallel_reads=2), _fastfile(300))
    assert flat(batches(built.dataset)) == expected
    assert _overlapping(built.open_hook.fetches)
    guide = preset("guide", format="tfrecord", files=(data["tfrecord"],), batch_size=100, epochs=1, seed=3)
    built = build(guide.with_source(mode="fastfile"), _fastfile(300))
    assert flat(batches(built.dataset)) == flat(batches(build(guide).dataset))
    assert len(built.open_hook.fetches) == 2 and _overlapping(built.open_hook.fetches)


@pytest.mark.tf
def test_fastfile_without_emulation_and_cold_file_reads_give_the_same_rows(data):
    spec = preset("aws-sample", format="libsvm", files=(data["libsvm"],), batch_size=100, epochs=1)
    expected = flat(batches(build(spec).dataset))
    plain = build(spec.with_source(mode="fastfile"), {"fastfile": {"emulate": False}})
    assert plain.open_hook is None and plain.source_note is None and flat(batches(plain.dataset)) == expected
    cold = build(spec, {"file": {"cold": True}})
    assert cold.source_note.startswith("cold page cache") and flat(batches(cold.dataset)) == expected


def test_source_settings_are_checked_like_any_experiment_key():
    experiment = parse_experiment({"name": "x"})
    assert experiment["pipelines"]["source_modes"] == ["file"]
    assert experiment["sources"]["fastfile"] == {"emulate": True, "first_read_latency_ms": 20.0,
                                                 "bandwidth_mb_per_sec": 200.0}
    with pytest.raises(ConfigError, match=r"pipelines.source_modes\[1\]: must be one of file, fastfile, pipe"):
        parse_experiment({"name": "x", "pipelines": {"source_modes": ["file", "s3"]}})
    with pytest.raises(ConfigError, match="sources.fastfile.first_read_latency_ms: must be at least 0"):
        parse_experiment({"name": "x", "sources": {"fastfile": {"first_read_latency_ms": -1}}})
    with pytest.raises(ConfigError, match="sources.pipe.pipe_dri: unknown key"):
        parse_experiment({"name": "x", "sources": {"pipe": {"pipe_dri": "/x"}}})
