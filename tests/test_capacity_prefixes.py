"""Capacity prefixes: for every preset × format, which prefixes are measured, what each adds, whether that runs
on one core at most and why, and how its elements count in examples. No TensorFlow here (the counts are
checked against real data in tests/test_capacity_measure.py)."""
from __future__ import annotations

import pytest

from pipebench.pipeline.prefixes import (
    SINK_EXAMPLES, SOURCE, Element, element_of, prefixes, sink_every, why_spec_sequential as why_sequential)
from pipebench.pipeline.presets import PRESETS, preset
from pipebench.pipeline.spec import FORMATS, PipelineSpec

RPR = 256
BATCH = 1024


def _preset(name: str, fmt: str, **kwargs) -> PipelineSpec:
    spec = preset(name, format=fmt, files=("data/part-*",), batch_size=BATCH, **kwargs)
    return spec.with_source(rows_per_record=RPR) if fmt == "packed" else spec


def _shape(spec: PipelineSpec) -> list[tuple[int, tuple[str, ...], str, bool]]:
    names = (SOURCE, *spec.kinds)
    return [(p.end, tuple(names[i] for i in p.adds), p.name, p.sequential) for p in prefixes(spec)]


#: preset → (stages built, stages added, stage named, sequential) of each prefix; the same for every format.
EXPECTED = {
    "aws-sample": [(0, ("source",), "source", True), (1, ("batch",), "batch", True),
                   (3, ("decode", "repeat"), "decode", False), (4, ("prefetch",), "prefetch", True)],
    "lambdaji-libsvm": [(0, ("source",), "source", True), (1, ("decode",), "decode", False),
                        (2, ("prefetch",), "prefetch", True), (4, ("shuffle", "repeat"), "shuffle", True),
                        (5, ("batch",), "batch", True)],
    # file names until the interleave opens them, and nothing before the cache runs once it is full
    "guide": [(2, ("source", "interleave", "cache"), "cache", True), (3, ("shuffle",), "shuffle", True),
              (4, ("batch",), "batch", True), (6, ("decode", "repeat"), "decode", False),
              (7, ("prefetch",), "prefetch", True)],
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_and_format_has_its_prefixes(name, fmt):
    spec = _preset(name, fmt)
    found = prefixes(spec)
    assert _shape(spec) == EXPECTED[name]
    assert found[-1].end == len(spec.stages)  # the last prefix is the whole pipeline
    # every stage is added by exactly one prefix, in order, and the source by the first
    assert [i for p in found for i in p.adds] == list(range(len(spec.stages) + 1))
    for prefix in found:
        assert prefix.label == " > ".join(("source", *spec.kinds[:prefix.end]))
        assert (prefix.why_sequential is None) == (not prefix.sequential)
        assert prefix.lanes == (1.0 if prefix.sequential else None), "a sequential stage: one core; else every one"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", PRESETS)
def test_elements_count_single_examples_before_batch_and_batches_after(name, fmt):
    spec = _preset(name, fmt)
    for prefix in prefixes(spec):
        element = element_of(spec, prefix.end)
        kinds = spec.kinds[:prefix.end]
        if "batch" in kinds:
            assert not element.unbatched and sink_every(element) == 1
            packed_records = fmt == "packed" and "decode" not in kinds
            assert element.examples == (-(-BATCH // RPR) * RPR if packed_records else BATCH)
        else:
            assert element.unbatched
            per = RPR if fmt == "packed" and "decode" not in kinds else 1
            assert element.examples == per
            assert sink_every(element) * per >= SINK_EXAMPLES  # about SINK_EXAMPLES examples per loop step


def test_element_words():
    assert element_of(_preset("aws-sample", "tfrecord"), 0) == Element(True, 1, "one record (one example)")
    assert element_of(_preset("aws-sample", "packed"), 0).counts == \
        "one packed record of 256 examples (the last may hold fewer)"
    assert element_of(_preset("aws-sample", "packed"), 1).counts == "a batch of 4 packed records of 256 examples"
    assert element_of(_preset("aws-sample", "libsvm"), 1).counts == "a batch of 1024 undecoded records (one example each)"
    assert element_of(_preset("lambdaji-libsvm", "libsvm"), 1) == Element(True, 1, "one example")
    assert element_of(_preset("lambdaji-libsvm", "packed"), 5) == Element(False, BATCH, "a batch of 1024 examples")


def test_the_source_is_sequential_without_parallel_reads():
    spec = _preset("aws-sample", "tfrecord")
    assert why_sequential(spec, "source") == "one TFRecord reader without parallel reads (num_parallel_reads None)"
    assert why_sequential(spec.with_source(num_parallel_reads=1), "source").endswith("(num_parallel_reads 1)")
    assert why_sequential(spec.with_source(num_parallel_reads="AUTOTUNE"), "source") is None
    assert why_sequential(spec.with_source(num_parallel_reads=4), "source") is None
    assert why_sequential(_preset("lambdaji-libsvm", "libsvm"), "source").startswith("one TextLine reader")
    assert why_sequential(spec.with_source(mode="pipe"), "source").startswith("Pipe mode streams one FIFO")


def test_decode_is_sequential_only_with_one_call_or_map_parallelization_off():
    spec = _preset("aws-sample", "tfrecord")
    decode = spec.stage("decode")
    assert why_sequential(spec, "decode") is None  # AUTOTUNE
    assert why_sequential(spec.with_stage(decode.replace(num_parallel_calls=1)), "decode") == \
        "a map with num_parallel_calls 1 runs one call at a time"
    unset = spec.with_stage(decode.replace(num_parallel_calls=None))
    assert why_sequential(unset, "decode") is None  # TensorFlow's map_parallelization, on by default
    for option in ("experimental_optimization.map_parallelization",
                   "experimental_optimization.apply_default_optimizations"):
        assert why_sequential(unset.with_option(option, False), "decode").startswith("a map without num_parallel_calls")
    assert why_sequential(unset.with_option("experimental_optimization.apply_default_optimizations", False)
                          .with_option("experimental_optimization.map_parallelization", True), "decode") is None


def test_interleave_is_sequential_without_parallel_calls_or_with_one_file_at_a_time():
    spec = _preset("guide", "tfrecord")
    interleave = spec.stage("interleave")
    assert why_sequential(spec, "interleave") is None
    assert why_sequential(spec.with_stage(interleave.replace(num_parallel_calls=None)), "interleave").startswith(
        "interleave with num_parallel_calls None")
    assert why_sequential(spec.with_stage(interleave.replace(cycle_length=1)), "interleave").startswith(
        "interleave with cycle_length 1")


def test_a_shard_of_records_is_its_own_prefix_and_a_shard_of_files_joins_the_interleave():
    sharded = _preset("aws-sample", "tfrecord", num_shards=2)
    assert _shape(sharded)[:2] == [(0, ("source",), "source", True), (1, ("shard",), "shard", True)]
    of_files = PipelineSpec.from_dict({"source": {"format": "tfrecord", "files": ["data/*"]},
                                       "stages": [{"shard": {"num_shards": 2, "index": 0}}, "interleave",
                                                  {"batch": 64}, "decode"]})
    assert _shape(of_files) == [(2, ("source", "shard", "interleave"), "interleave", False),
                                (3, ("batch",), "batch", True), (4, ("decode",), "decode", False)]


def test_stages_before_a_late_cache_join_it_and_a_leading_repeat_joins_the_source():
    late_cache = PipelineSpec.from_dict({"source": {"format": "libsvm", "files": ["data/*"]},
                                         "stages": [{"batch": 64}, "decode", "cache", "prefetch"]})
    assert _shape(late_cache) == [(3, ("source", "batch", "decode", "cache"), "cache", True),
                                  (4, ("prefetch",), "prefetch", True)]
    leading_repeat = PipelineSpec.from_dict({"source": {"format": "libsvm", "files": ["data/*"]},
                                             "stages": ["repeat", {"batch": 64}, "decode"]})
    assert _shape(leading_repeat) == [(1, ("source", "repeat"), "source", True), (2, ("batch",), "batch", True),
                                      (3, ("decode",), "decode", False)]
