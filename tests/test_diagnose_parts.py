"""The parts of `pipebench diagnose` that need no TensorFlow: which prefixes are measured (inside interleaves too),
how many cores a stage may use, which stage a profiler's iterator names, and the bounded
sample of the data the content check reads (its start, middle and end)."""
from __future__ import annotations

import os
import signal
import struct
from pathlib import Path

import pytest

from pipebench.pipeline.prefixes import lanes, measured_prefixes
from pipebench.diagnose.profiler import stage_of
from pipebench.pipeline.stages import Stage
from pipebench.diagnose.records import PrefixCost
from pipebench.pipeline.prefixes import Prefix
from pipebench.results.stage_costs import StageCost
from pipebench.diagnose.sample import MAX_ROWS, MIN_ROWS, rows_target, sample_arguments, spread
from pipebench.measure.intervals import Interval


def _stage(index: int, kind: str, inside: int | None = None, parallelism: str | None = None, **params) -> Stage:
    return Stage(index, kind, (), f".{kind}()", None, None, parallelism, None, None, None, None, (), False, None,
                 params, inside)


def _model_garden() -> list[Stage]:
    """range(8).interleave(make_dataset, AUTOTUNE) → prefetch, make_dataset: TextLine → batch → map."""
    return [_stage(0, "source"), _stage(1, "interleave", parallelism="AUTOTUNE", cycle_length=8,
                                        num_parallel_calls="AUTOTUNE"),
            _stage(2, "source", 1, reader="TextLineDataset"), _stage(3, "batch", 1, batch_size=256),
            _stage(4, "map", 1, parallelism="AUTOTUNE"), _stage(5, "prefetch")]


def test_an_element_past_an_interleave_that_batches_holds_the_batch_its_function_makes():
    """A buffer after `interleave(... .batch(256))` holds 256 rows an element: named, capped and filled by its rows
    (a prefetch(1,000) of such batches is 256,000 rows, not 1,000)."""
    from dataclasses import replace

    from pipebench.diagnose.buffers import capped, rows_per_element
    from pipebench.pipeline.stages import Step

    stages = _model_garden()
    stages = [replace(s, batched=s.index >= 3 or s.index == 1) for s in stages]
    stages[5] = replace(stages[5], params={"buffer_size": 1000})
    assert [rows_per_element(stages, s) for s in stages] == [1, 256, 1, 256, 256, 256]
    _, notes = capped((Step("prefetch", {"buffer_size": 1000}, 5),), stages)
    assert "measured as prefetch(4)" in notes[5], "1,024 rows deep: four batches of 256"
    rebatched = [replace(s, batched=s.index > 0) for s in
                 (_stage(0, "source"), _stage(1, "batch", batch_size=256), _stage(2, "rebatch", batch_size=64),
                  _stage(3, "prefetch"))]
    assert rows_per_element(rebatched, rebatched[3]) == 64


def test_what_a_row_holds_is_read_before_the_shuffles_that_would_fill_first_and_a_buffer_at_the_cap_is_as_written():
    """tfrs's map → shuffle(100,000) → take → shuffle(100,000) → batch → cache: what a row holds is read at the map
    (read past the shuffles, one element cost two fills: 2.5 s each); a shuffle no larger than the cap is measured
    as written, and one larger is capped."""
    from dataclasses import replace

    from pipebench.diagnose.buffers import MEASURE_CAP_ROWS, capped, large_buffers, same_rows_from
    from pipebench.pipeline.stages import Step

    stages = [_stage(0, "source"), _stage(1, "map"), _stage(2, "shuffle", buffer_size=100_000),
              _stage(3, "take", count=80_000), _stage(4, "shuffle", buffer_size=100_000), _stage(5, "batch"),
              _stage(6, "cache")]
    stages = [replace(s, batched=s.index >= 5) for s in stages]
    assert [same_rows_from(stages, i) for i in range(7)] == [0, 1, 1, 1, 1, 1, 1]
    asked: list[int] = []
    found = large_buffers(stages, [], {}, lambda end: asked.append(end) or 8.0, lambda text: None)
    assert [b.stage for b in found] == [2, 4] and asked == [1, 1]
    _, notes = capped((Step("shuffle", {"buffer_size": MEASURE_CAP_ROWS}, 2),
                       Step("shuffle", {"buffer_size": MEASURE_CAP_ROWS + 1}, 4)), stages)
    assert list(notes) == [4] and f"capped at {MEASURE_CAP_ROWS:,} elements" in notes[4]


def test_a_plain_loops_fill_is_planned_at_the_slow_end_of_its_rate():
    """babyweight's shuffle of 1,000 batches of 512 behind a prefix at 35,712 rows/s: 14.3 s at that rate; its
    second worker's first round took 27-33 s, its plain loop's fill most of it (2026-12-05)."""
    from pipebench.diagnose.buffers import large_buffers, slow_fill_sec

    stages = [_stage(0, "source"), _stage(1, "map"), _stage(2, "shuffle", buffer_size=512_000), _stage(3, "batch")]
    costs = [_cost(1, 35_712.0, 30.0, 30.0)]  # its interval 0.9-1.1x of the mean
    found = large_buffers(stages, costs, {}, lambda end: 256.0, lambda text: None)
    assert [b.fill_sec for b in found] == [pytest.approx(512_000 / 35_712)]
    assert slow_fill_sec(found[0], costs) == pytest.approx(512_000 / (0.9 * 35_712))
    assert slow_fill_sec(found[0], []) == 0.0, "no rate measured before it: nothing to plan by"


def test_a_combination_is_not_measured_when_a_kept_cache_skips_everything_the_others_change():
    from pipebench.diagnose.rewrites import Proposal, cache_covering

    def proposal(name, kind, changes, options=None):
        return Proposal(name, kind, None, "", "", None, True, None, options or {}, changes=changes)

    cache = proposal("cache after interleave", "cache", (0, 1, 2))
    before = proposal("interleave in place of parallel_interleave", "core_interleave", (1, 2))
    assert cache_covering([before, cache]) is cache
    assert cache_covering([proposal("vectorize", "vectorize", (4,)), cache]) is None, "after the cache: combined"
    assert cache_covering([proposal("options", "options", None, {"deterministic": False}), cache]) is None
    assert cache_covering([cache]) is None and cache_covering([before]) is None


def test_the_stages_inside_an_interleave_are_measured_on_their_own_before_it():
    stages = _model_garden()
    found = measured_prefixes(stages, cores=2)
    assert [p.end for p in found] == [2, 3, 4, 1, 5], "inner stages first, then the outer chain through the interleave"
    assert [p.adds for p in found] == [(2,), (3,), (4,), (0, 1), (5,)], "the range joins the interleave's prefix"
    assert [p.stage for p in found] == [2, 3, 4, 1, 5]


def test_a_sequential_stage_inside_a_parallel_interleave_may_use_as_many_cores_as_run_at_once():
    stages = _model_garden()
    assert lanes(stages, 3, cores=2) == (2.0, None), "batch runs in each of the interleave's inner pipelines"
    serial = [_stage(0, "source"), _stage(1, "interleave", cycle_length=8), _stage(2, "source", 1),
              _stage(3, "batch", 1)]
    cores, why = lanes(serial, 3, cores=2)
    assert cores == 1.0 and why.startswith("batch takes its input elements one at a time")


def test_a_repeat_is_measured_with_the_stage_before_it_and_a_cache_with_all_above_it():
    stages = [_stage(0, "source", reader="TFRecordDataset"), _stage(1, "map"), _stage(2, "repeat"),
              _stage(3, "batch")]
    assert [p.end for p in measured_prefixes(stages, 2)] == [0, 2, 3]
    cached = [_stage(0, "source"), _stage(1, "map"), _stage(2, "cache"), _stage(3, "shuffle")]
    assert [p.end for p in measured_prefixes(cached, 2)] == [2, 3]


def test_a_take_and_a_prefetch_of_batches_are_measured_with_the_stage_before_them_named_for_it():
    """They add no work per row: a prefix arm each measured nothing (real_tfrs_ranking_cache's take,
    real_tda_babyweight_make_csv's two prefetches). A prefetch of single examples keeps its own."""
    from dataclasses import replace

    stages = [_stage(0, "source", reader="TextLineDataset"), _stage(1, "map"), _stage(2, "take", count=80),
              _stage(3, "prefetch"), _stage(4, "batch", batch_size=64), _stage(5, "prefetch")]
    stages = [replace(s, batched=s.index >= 4) for s in stages]
    found = measured_prefixes(stages, 2)
    assert [(p.end, p.adds, p.stage) for p in found] == [(0, (0,), 0), (2, (1, 2), 1), (3, (3,), 3),
                                                         (5, (4, 5), 4)]
    assert found[-1].name == "batch" and found[1].name == "map"


def test_a_profilers_iterator_is_matched_to_the_stage_it_runs_from_the_root():
    lambdaji = [_stage(0, "source"), _stage(1, "map"), _stage(2, "prefetch"), _stage(3, "shuffle"),
                _stage(4, "repeat"), _stage(5, "batch")]
    # inject_prefetch's own prefetch at the root matches no stage; the user's prefetch(500000) is stage 2
    assert stage_of("Iterator::Root::Prefetch::BatchV2::Shuffle::Prefetch::ParallelMapV2", lambdaji) == 1
    assert stage_of("Iterator::Root::Prefetch::BatchV2::Shuffle::Prefetch", lambdaji) == 2
    assert stage_of("Iterator::Root::Prefetch::BatchV2::ShuffleAndRepeat::Prefetch::ParallelMapV2[3]::FlatMap",
                    lambdaji) == 0, "a reader of several files is a flat_map over them"
    assert stage_of("Iterator::Root::Prefetch::ParallelInterleaveV4[0]::ParallelMapV2", _model_garden()) == 4, \
        "into the pipeline the interleave's function builds"
    assert stage_of("Iterator::Root::SomethingNew", lambdaji) is None


def test_the_sample_spreads_over_the_files_and_holds_a_few_batches():
    assert spread(1) == [0] and spread(3) == [0, 1, 2] and spread(32) == [0, 10, 21, 31]
    assert rows_target(None) == MIN_ROWS and rows_target(4096) == 16_384 and rows_target(1 << 20) == MAX_ROWS


def _lines(path: Path, count: int) -> None:
    path.write_text("".join(f"{i % 2} 1:{i}\n" for i in range(count)))


def test_the_sample_of_a_text_file_holds_rows_from_its_start_middle_and_end(tmp_path):
    _lines(tmp_path / "a.txt", 100_000)
    sample = sample_arguments({"files": [str(tmp_path / "a.txt")], "batch_size": 64}, tmp_path / "s", 64)
    rows = (Path(sample.kwargs["files"][0])).read_text().splitlines()
    numbers = [int(line.split(":")[1]) for line in rows]
    assert len(rows) == sample.rows == MIN_ROWS
    assert numbers[0] == 0 and 99_999 in numbers, "the first and the last line"
    assert any(45_000 < n < 55_000 for n in numbers), "lines from its middle"
    assert all(line.count(" ") == 1 for line in rows), "whole lines only"
    assert sample.scope.startswith("a sample of 1 of 1 file(s) (files): 6,000 rows from the start, middle and end")


def _tfrecords(path: Path, count: int) -> None:
    from pipebench.converters.tfrecord import masked_crc32c

    with open(path, "wb") as f:
        for i in range(count):
            payload = f"record {i:07d}".encode() * (1 + i % 3)
            header = struct.pack("<Q", len(payload))
            f.write(header + struct.pack("<I", masked_crc32c(header)) + payload
                    + struct.pack("<I", masked_crc32c(payload)))


def test_the_sample_of_a_tfrecord_file_finds_whole_records_again_after_a_seek(tmp_path):
    _tfrecords(tmp_path / "a.tfrecord", 60_000)
    sample = sample_arguments({"pattern": str(tmp_path / "*.tfrecord")}, tmp_path / "s", None)
    mirror = Path(sample.kwargs["pattern"]).parent
    data = (mirror / "a.tfrecord").read_bytes()
    found, pos = [], 0
    while pos < len(data):
        length = struct.unpack("<Q", data[pos:pos + 8])[0]
        found.append(int(data[pos + 12:pos + 12 + length][7:14]))
        pos += 16 + length
    assert pos == len(data) and len(found) == sample.rows
    assert found[0] == 0 and found[-1] == 59_999 and any(25_000 < n < 35_000 for n in found)
    assert sample.kwargs["pattern"].endswith("/*.tfrecord"), "the pattern is kept, its folder mirrored"


def test_a_list_of_many_files_is_sampled_first_middle_and_last_and_small_files_are_whole(tmp_path):
    names = []
    for i in range(10):
        _lines(tmp_path / f"part-{i}.txt", 50)
        names.append(str(tmp_path / f"part-{i}.txt"))
    sample = sample_arguments({"files": names, "n": 3}, tmp_path / "s", 8)
    kept = [os.path.basename(p) for p in sample.kwargs["files"]]
    assert kept == ["part-0.txt", "part-3.txt", "part-6.txt", "part-9.txt"] and sample.kwargs["n"] == 3
    assert sample.rows == 4 * 50 and sample.of_files == 10


def test_without_the_profilers_tools_its_answer_says_how_to_get_them(monkeypatch):
    from pipebench.diagnose import profiler

    monkeypatch.setattr(profiler, "_tool_reader", lambda: None)
    found = profiler.profile(None, [], 0)
    assert not found.available and found.answer == "unavailable: install pipebench[profile] (xprof, the TF " \
                                                   "Profiler's tools)"


def test_a_small_file_is_sampled_whole_without_losing_a_line_where_its_runs_meet(tmp_path):
    from pipebench.diagnose.sample import _lines

    path = tmp_path / "a.txt"
    path.write_text("".join(f"{i % 2} 1:{i}\n" for i in range(1000)))
    data, rows = _lines(path, 667)
    numbers = [int(line.split(b":")[1]) for line in data.splitlines()]
    assert rows == 1000 and numbers == list(range(1000)), "head, middle and end meet at line boundaries"


class _BankedArm:
    """An arm whose first calls read what its buffers banked (`draining`: rows per call as the bank empties), then
    100 rows a call, on a clock that passes only as its calls say: 0.1 s a call."""

    def __init__(self, draining: list[int]) -> None:
        self.now, self.draining, self.calls = 0.0, draining, 0
        self.whole_passes = False

    def clock(self) -> float:
        return self.now

    def call(self) -> tuple[int, float]:
        self.now += 0.1
        self.calls += 1
        return (self.draining[self.calls - 1] if self.calls <= len(self.draining) else 100), 0.0


def test_an_arm_settles_until_it_has_drained_what_its_buffers_banked():
    from pipebench.measure.rounds import SETTLE_MAX_SEC, settle

    for draining, calls in (([], 2), ([1000], 3), ([1000, 500, 250], 5), ([110], 2)):
        arm = _BankedArm(draining)
        settle(arm, 0.2, 0)
        assert arm.calls == calls, draining  # the calls that drain, then two at the pipeline's own rate
    arm = _BankedArm([])
    settle(arm, 0.2, 5000)  # a first settle fills its shuffle buffers: 5,000 rows at least
    assert arm.calls == 50
    endless = _BankedArm([int(1e9 / 2 ** k) for k in range(100)])  # it never stops falling: the cap ends it
    settle(endless, 0.2, 0)
    assert 0.2 + SETTLE_MAX_SEC <= endless.now <= 0.2 + SETTLE_MAX_SEC + 0.11


def test_a_rewrite_ahead_in_the_first_rounds_is_kept_only_when_fresh_rounds_confirm_it():
    """The first rounds pick the fastest of several candidates, and stop early once decided: their figure is the
    winner's. The gain a kept rewrite reports is the fresh rounds' one."""
    from pipebench.diagnose.records import Content
    from pipebench.diagnose.rewrites import Proposal
    from pipebench.diagnose.verdict import rewrite_verdict
    from pipebench.measure.intervals import Interval

    candidate = Proposal("options: deterministic=False", "options", None, "why", "change", None, True)
    same = Content(True, None, 100, 100, None, (), False)
    first = Interval(1.30, 1.10, 1.50, 5)

    def verdict(confirmed: Interval | None):
        return rewrite_verdict(candidate, (), first, same, confirmed)

    kept = verdict(Interval(1.20, 1.05, 1.35, 5))
    assert kept.kept and kept.gain.mean == 1.20 and "fresh rounds" in kept.verdict and "1.30" in kept.verdict
    dropped = verdict(Interval(1.02, 0.95, 1.09, 5))
    assert not dropped.kept and dropped.gain.mean == 1.02 and "not confirmed" in dropped.verdict
    assert verdict(None).kept, "measured alone, once (the combination of confirmed rewrites)"
    later = rewrite_verdict(candidate, (), first, same, None, None, True)
    assert later.kept and later.gain == first and "a second worker process measures it" in later.verdict


def test_the_module_builds_the_kept_rewrite_or_combination_with_the_largest_gain():
    """The combination of kept rewrites is measured, not trusted: on `augment` a parallel map alone gained 1.84x and
    with a prefetch after it 1.37x."""
    from pipebench.diagnose.export import best_of
    from pipebench.diagnose.records import Rewrite
    from pipebench.measure.intervals import Interval

    def rewrite(name: str, gain: float, kept: bool = True) -> Rewrite:
        return Rewrite(name, "map", 1, "why", "change", None, True, (), {}, Interval(gain, gain - 0.1, gain + 0.1, 5),
                       True, None, kept, "kept" if kept else "not kept", None)

    alone = [rewrite("parallel map", 1.84), rewrite("prefetch", 1.26), rewrite("slower", 2.5, kept=False)]
    assert best_of(alone, rewrite("combined", 1.37)).name == "parallel map"
    assert best_of(alone, rewrite("combined", 2.10)).name == "combined"
    assert best_of(alone, rewrite("combined", 3.0, kept=False)).name == "parallel map"
    assert best_of([rewrite("slower", 2.5, kept=False)], None) is None



def test_what_cannot_act_on_the_pipeline_read_alone_is_named_and_not_measured():
    """A parallel interleave that only reads one file has nothing to run in parallel (one whose function works on
    what it reads overlaps that work, as a prefetch would: measured), and a private thread pool only matters beside
    the training step's ops: both are named, neither costs a diagnosis rounds."""
    from pipebench.diagnose.rewrites import propose

    def proposed(files: list[str], inner: str = "skip") -> list:
        stages = [_stage(0, "source", listed=files), _stage(1, "interleave", cycle_length=4),
                  _stage(2, "source", 1, reader="TextLineDataset"), _stage(3, inner, 1), _stage(4, "map"),
                  _stage(5, "batch", batch_size=256)]
        return propose(stages, True, {}, {s.index: 0.25 for s in stages}, 4, {}, None, 1e9, True)

    one = {c.kind: c for c in proposed(["a.txt"]) if c.kind == "parallel_interleave"}["parallel_interleave"]
    assert not one.automatic and one.transform is None and "one file" in one.note
    for measured in (proposed(["a.txt", "b.txt"]), proposed(["a.txt"], inner="shuffle")):
        found = [c for c in measured if c.kind == "parallel_interleave"]  # several files, or work in its function
        assert len(found) == 1 and found[0].automatic and found[0].transform is not None
    options = {tuple(c.options): c for c in proposed(["a.txt"]) if c.kind == "options"}
    pool = options[("threading.private_threadpool_size",)]
    assert not pool.automatic and "training step" in pool.note
    assert options[("deterministic",)].automatic, "deterministic=False is still measured"


def _cost(stage: int, rows_per_sec: float, prefix_cpu_us: float, own_cpu_us: float,
          sequential: bool = False) -> PrefixCost:
    rate = Interval(rows_per_sec, rows_per_sec * 0.9, rows_per_sec * 1.1, 4)
    why = "one thread" if sequential else None
    own = own_cpu_us * 1e-6
    prefix = Prefix(stage, (stage,), stage, f"stage {stage}", f"prefix {stage}", 1.0 if sequential else 2.0, why)
    cost = StageCost(f"stage {stage}", sequential, why, rate, Interval(prefix_cpu_us * 1e-6, prefix_cpu_us * 1e-6,
                                                                       prefix_cpu_us * 1e-6, 4),
                     own, 1.0 / own if own else None)
    return PrefixCost(prefix, cost, own_cpu_us / 870.0)


def test_a_rewrite_is_bounded_by_the_stages_it_leaves_as_they_are():
    """The py_function pipeline as measured (TextLine 300k rows/s alone → map(py_function) ~1.2k in one thread →
    batch ~1.3k): faster reads or a prefetch after the map leave the map, and cannot gain; vectorizing the map
    leaves only the reads, 230× over it. A per-line decode on both cores (lambdaji_libsvm: 16.4k rows/s at 112
    CPU-µs per row): faster reads free 3 of them, no more than 1.12× on 2 cores. A rewrite that changes every
    stage has no ceiling."""
    from pipebench.diagnose.ceiling import MEASURE_ABOVE, ceiling
    from pipebench.diagnose.rewrites import propose

    stages = [_stage(0, "source", reader="TextLineDataset", files=["a", "b"]), _stage(1, "map"),
              _stage(2, "batch", batch_size=256)]
    costs = [_cost(0, 300_000, 3.0, 3.0), _cost(1, 1_213, 869.0, 866.0, sequential=True), _cost(2, 1_302, 870.0, 1.0)]
    reads = ceiling((0,), stages, costs, 1, 2)
    assert reads is not None and reads.gain < MEASURE_ABOVE and not reads.measurable
    assert "bottleneck map" in reads.why and "1,302" in reads.why
    vectorized = ceiling((1, 2), stages, costs, 1, 2)
    assert vectorized.measurable and round(vectorized.gain) == 230 and "300,000 rows/s alone" in vectorized.why
    assert ceiling(None, stages, costs, 1, 2) is None and ceiling((0, 1, 2), stages, costs, 1, 2) is None
    found = {c.kind: c for c in propose(stages, True, {}, {0: 0.0, 1: 1.0, 2: 0.0}, 1, {}, None, 1e9, False)}
    assert found["parallel_reads"].changes == (0,) and found["prefetch"].changes == (2,)
    assert not ceiling(found["prefetch"].changes, stages, costs, 1, 2).measurable
    both = [_cost(0, 300_000, 3.0, 3.0), _cost(1, 18_900, 109.0, 106.0), _cost(2, 16_400, 112.0, 3.0)]
    reads = ceiling((0,), stages, both, 1, 2)
    assert reads.gain == pytest.approx(2e6 / 109.0 / 16_400) and "2 cores" in reads.why and not reads.measurable
    assert ceiling((0,), stages, both, 1, 4).measurable, "on 4 cores the same stages could pass more"
    garden = [*_model_garden(), _stage(6, "repeat", count=None)]
    cache = [c for c in propose(garden, True, {}, {}, 4, {}, 1e6, 1e9, True, 1.0) if c.kind == "cache"]
    assert cache[0].automatic and cache[0].changes == (0, 1, 2, 3, 4, 5), "a cache skips what an interleave builds"


@pytest.mark.slow
def test_a_diagnosis_beside_a_process_spinning_on_a_core_reads_the_machine_as_busy():
    import subprocess
    import sys
    import time

    from pipebench.diagnose.machine import machine_meter

    # not a child of this process: the meter counts the worker's own tree (the user's processes) as its own
    started = subprocess.run(["sh", "-c", f"'{sys.executable}' -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True)
    hog = int(started.stdout.strip())
    try:
        read = machine_meter()
        time.sleep(1.0)
        found = read()
    finally:
        os.kill(hog, signal.SIGKILL)
    assert found.busy and found.others_cpu_pct > found.threshold_pct == 25.0, found
    assert found.steal_pct >= 0.0
