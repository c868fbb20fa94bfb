"""PipelineSpec: pure data, YAML/JSON round trip, stable fingerprint, one-line errors naming the path."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipebench.errors import ConfigError, UsageError
from pipebench.pipeline.presets import PRESETS, preset
from pipebench.pipeline.spec import AUTOTUNE, STAGE_KINDS, Options, PipelineSpec, Source, StageSpec, order_problem

FULL = {
    "source": {"format": "tfrecord", "mode": "file", "files": ["data/part-*.tfrecord"], "compression": "gzip",
               "field_size": 39, "buffer_size": 1 << 20},
    "stages": [
        {"interleave": {"cycle_length": 4, "block_length": 16, "num_parallel_calls": "AUTOTUNE"}},
        {"shuffle": {"buffer_size": 10000, "seed": 7}},
        {"cache": "/tmp/pipebench-cache"},
        {"batch": {"batch_size": 1024, "drop_remainder": True}},
        {"decode": {"num_parallel_calls": 8}},
        {"repeat": 3},
        "prefetch",
    ],
    "options": {"deterministic": False, "autotune": {"enabled": True, "cpu_budget": 2, "ram_budget": 1 << 30},
                "threading": {"private_threadpool_size": 2, "max_intra_op_parallelism": 1},
                "experimental_optimization": {"map_parallelization": True, "parallel_batch": False}},
}


def test_full_spec_parses_with_defaults_filled():
    spec = PipelineSpec.from_dict(FULL)
    assert spec.kinds == ("interleave", "shuffle", "cache", "batch", "decode", "repeat", "prefetch")
    assert spec.stage("shuffle")["reshuffle_each_iteration"] is True
    assert spec.stage("cache")["location"] == "/tmp/pipebench-cache"
    assert spec.stage("repeat")["epochs"] == 3
    assert spec.stage("prefetch")["buffer_size"] == AUTOTUNE
    assert spec.options.to_dict()["autotune"] == {"enabled": True, "cpu_budget": 2, "ram_budget": 1 << 30}
    assert spec.ordering == "interleave > shuffle > cache > batch > decode > repeat > prefetch"


@pytest.mark.parametrize("name", PRESETS)
def test_presets_round_trip_through_yaml_and_json(name):
    spec = preset(name, files=("a/*.tfrecord",), seed=3)
    assert PipelineSpec.from_text(spec.to_yaml()) == spec
    assert PipelineSpec.from_text(spec.to_json()) == spec
    assert PipelineSpec.from_dict(json.loads(spec.to_json())).fingerprint() == spec.fingerprint()


@pytest.mark.slow
def test_fingerprint_is_stable_across_processes_and_releases():
    # A changed value means every stored result's fingerprint changes: bump deliberately, never by accident.
    spec = PipelineSpec.from_dict(FULL)
    code = f"from pipebench.pipeline.spec import PipelineSpec; print(PipelineSpec.from_dict({FULL!r}).fingerprint())"
    other_process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other_process.stdout.strip() == spec.fingerprint()
    assert spec.fingerprint() == "8eb5dc658a89746ade3be02d878da3492c819e768af93461c211b9bd0b1d3e70"


def test_fingerprint_changes_with_anything_measured():
    spec = PipelineSpec.from_dict(FULL)
    changed = [
        spec.reordered(("interleave", "cache", "shuffle", "batch", "decode", "repeat", "prefetch")),
        spec.with_stage(spec.stage("batch").replace(batch_size=512)),
        spec.with_source(files=("other/*.tfrecord",)),
        spec.with_option("deterministic", True),
    ]
    assert len({spec.fingerprint(), *(c.fingerprint() for c in changed)}) == 1 + len(changed)


_tunable = st.one_of(st.just(AUTOTUNE), st.integers(1, 64))
_stage = {
    "interleave": st.fixed_dictionaries({"cycle_length": _tunable, "block_length": st.integers(1, 64),
                                         "num_parallel_calls": st.one_of(st.none(), _tunable)}),
    "shard": st.integers(1, 8).flatmap(lambda n: st.fixed_dictionaries({"num_shards": st.just(n),
                                                                        "index": st.integers(0, n - 1)})),
    "shuffle": st.fixed_dictionaries({"buffer_size": st.integers(1, 10**6),
                                      "seed": st.one_of(st.none(), st.integers(0, 2**31)),
                                      "reshuffle_each_iteration": st.booleans()}),
    "cache": st.fixed_dictionaries({"location": st.one_of(st.just("memory"), st.text("abc/_-.", min_size=1))}),
    "batch": st.fixed_dictionaries({"batch_size": st.integers(1, 1 << 16), "drop_remainder": st.booleans()}),
    "decode": st.fixed_dictionaries({"num_parallel_calls": st.one_of(st.none(), _tunable)}),
    "repeat": st.fixed_dictionaries({"epochs": st.one_of(st.none(), st.integers(1, 100))}),
    "prefetch": st.fixed_dictionaries({"buffer_size": _tunable}),
}


@st.composite
def specs(draw) -> PipelineSpec:
    optional = draw(st.sets(st.sampled_from([k for k in STAGE_KINDS if k not in ("batch", "decode")])))
    kinds = draw(st.permutations(sorted(optional | {"batch", "decode"})))
    if "interleave" in kinds:  # keep it legal: interleave first, after an optional shard
        kinds = [k for k in kinds if k not in ("interleave", "shard")]
        kinds = (["shard"] if "shard" in optional else []) + ["interleave"] + kinds
    stages = [{kind: draw(_stage[kind])} for kind in kinds]
    source = {"format": draw(st.sampled_from(["libsvm", "tfrecord", "packed"])),
              "files": draw(st.lists(st.text("abc/*_", min_size=1), max_size=3)),
              "compression": draw(st.sampled_from(["none", "gzip", "zlib"])),
              "field_size": draw(st.integers(1, 100)), "rows_per_record": draw(st.integers(1, 1024))}
    if "interleave" not in kinds:
        source["num_parallel_reads"] = draw(st.one_of(st.none(), _tunable))
    options = {"deterministic": draw(st.one_of(st.none(), st.booleans())),
               "autotune": {"cpu_budget": draw(st.one_of(st.none(), st.integers(0, 64)))},
               "experimental_optimization": {"map_fusion": draw(st.one_of(st.none(), st.booleans()))}}
    return PipelineSpec.from_dict({"source": source, "stages": stages, "options": options})


@settings(max_examples=150, deadline=None)
@given(specs())
def test_any_spec_round_trips_with_the_same_fingerprint(spec):
    for text in (spec.to_yaml(), spec.to_json()):
        again = PipelineSpec.from_text(text)
        assert again == spec
        assert again.fingerprint() == spec.fingerprint()
    assert hash(again) == hash(spec)


@pytest.mark.parametrize("stage, parsed", [
    ("prefetch", {"prefetch": {"buffer_size": AUTOTUNE}}),
    ({"batch": 256}, {"batch": {"batch_size": 256, "drop_remainder": False}}),
    ({"cache": "memory"}, {"cache": {"location": "memory"}}),
    ({"cache": None}, {"cache": {"location": "memory"}}),
    ({"repeat": None}, {"repeat": {"epochs": None}}),
    ({"decode": {"num_parallel_calls": "autotune"}}, {"decode": {"num_parallel_calls": AUTOTUNE}}),
    ({"decode": {"num_parallel_calls": None}}, {"decode": {"num_parallel_calls": None}}),
])
def test_stage_shorthands(stage, parsed):
    assert StageSpec.from_obj(stage, "stages[0]").to_obj() == parsed


def _with(path: tuple, value) -> dict:
    doc = json.loads(json.dumps(FULL))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize("doc, message", [
    (_with(("stages", 1, "shuffle", "buffer_size"), "big"),
     "pipelines.stages[1].shuffle.buffer_size: must be an integer ≥ 1, not 'big'"),
    (_with(("stages", 1, "shuffle", "buffer_size"), "AUTOTUNE"),
     "pipelines.stages[1].shuffle.buffer_size: must be an integer ≥ 1, not 'AUTOTUNE'"),
    (_with(("stages", 4, "decode", "num_parallel_calls"), 0),
     "pipelines.stages[4].decode.num_parallel_calls: must be AUTOTUNE or an integer ≥ 1, or null, not 0"),
    (_with(("stages", 0), {"interleave": {"cycle": 2}}),
     "pipelines.stages[0].interleave.cycle: unknown key"),
    (_with(("stages", 0), {"map": {}}), "pipelines.stages[0]: must be one of interleave, shard"),
    (_with(("stages", 0), {"batch": 1, "decode": 2}), "pipelines.stages[0]: a stage is one `kind: parameters` entry"),
    (_with(("stages", 3), {"batch": {"drop_remainder": True}}), "pipelines.stages[3].batch.batch_size: required"),
    (_with(("stages", 3), {"shard": {"num_shards": 2, "index": 2}}),
     "pipelines.stages[3].shard.index: must be below num_shards (2), not 2"),
    (_with(("stages", 3), "decode"), "pipelines.stages: stage decode appears 2 times"),
    (_with(("stages", 3), "prefetch"), "pipelines.stages: stage prefetch appears 2 times"),
    (_with(("stages",), ["decode", "prefetch"]), "pipelines.stages: no batch stage"),
    (_with(("stages",), [{"batch": 8}, "interleave", "decode"]), "pipelines.stages: interleave opens the files"),
    (_with(("source", "format"), "csv"), "pipelines.source.format: must be one of libsvm, tfrecord, packed"),
    (_with(("source", "mode"), "pipe"), "pipelines.stages: Pipe mode streams one FIFO per channel"),
    (_with(("source", "num_parallel_reads"), 4), "pipelines.source.num_parallel_reads: interleave reads the files"),
    (_with(("source", "files"), 3), "pipelines.source.files: must be a list of paths or globs"),
    (_with(("options", "autotune", "enabled"), "yes"), "pipelines.options.autotune.enabled: must be true or false"),
    (_with(("options", "experimental_optimization", "new_flag"), 2),
     "pipelines.options.experimental_optimization.new_flag: must be true or false"),
    (_with(("options", "threads"), {}), "pipelines.options.threads: unknown key"),
    (_with(("options",), [1]), "pipelines.options: must be a mapping, not list"),
])
def test_errors_name_the_yaml_path(doc, message):
    with pytest.raises(ConfigError) as err:
        PipelineSpec.from_dict(doc, "pipelines")
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_a_single_glob_string_is_a_one_item_file_list():
    assert PipelineSpec.from_dict(_with(("source", "files"), "x/*.tfrecord")).source.files == ("x/*.tfrecord",)


def test_pipe_mode_rejects_what_pipe_mode_cannot_do():
    stages = ("batch", "decode")
    pipe = Source(format="tfrecord", mode="pipe", channel="train")
    spec = PipelineSpec(pipe, tuple(StageSpec.of(k, batch_size=8) if k == "batch" else StageSpec.of(k) for k in stages))
    assert spec.source.mode == "pipe"
    with pytest.raises(ConfigError, match="source.compression: not available in Pipe mode"):
        spec.with_source(compression="gzip")


def test_unknown_options_in_known_groups_are_kept_for_the_builder_to_probe():
    options = Options.from_dict({"autotune": {"initial_parallelism": 4},
                                 "experimental_optimization": {"warm_start": True}})
    assert dict(options.settings) == {"autotune.initial_parallelism": 4, "experimental_optimization.warm_start": True}


def test_order_problem_names_the_rule():
    assert order_problem(("shard", "interleave", "batch", "decode")) is None
    assert "only a shard" in order_problem(("shuffle", "interleave", "batch", "decode"))


# ---- issue 12: numbers and YAML a shared spec file may hold --------------------------------------------------

@pytest.mark.parametrize("path, value, message", [
    (("stages", 1, "shuffle", "buffer_size"), float("nan"), "must be an integer ≥ 1, not nan"),
    (("stages", 1, "shuffle", "seed"), float("inf"), "must be an integer ≥ 0 or null, not inf"),
    (("stages", 3, "batch", "batch_size"), 64.0, "must be an integer ≥ 1, not 64.0"),
    (("stages", 1, "shuffle", "buffer_size"), 2**63, "must be an integer ≥ 1 that fits in 64 bits, not 9223372036"),
    (("stages", 6), {"prefetch": float("-inf")}, "must be AUTOTUNE or an integer ≥ 1, not -inf"),
    (("source", "buffer_size"), float("nan"), "must be an integer ≥ 1 or null, not nan"),
    (("options", "autotune", "ram_budget"), float("inf"), "must be an integer ≥ 0, not inf"),
    (("options", "autotune", "new_budget"), 2**64, "must be true, false or a 64-bit integer, not 18446744073709551616"),
    (("options", "autotune", "new_budget"), 0.5, "must be true, false or a 64-bit integer, not 0.5"),
])
def test_non_integers_and_integers_beyond_64_bits_are_refused(path, value, message):
    with pytest.raises(ConfigError) as err:
        PipelineSpec.from_dict(_with(path, value), "pipelines")
    assert message in str(err.value)


def test_spec_text_with_a_duplicate_key_is_refused_with_its_line():
    text = PipelineSpec.from_dict(FULL).to_yaml().replace("    seed: 7\n", "    seed: 7\n    seed: 8\n")
    line = text.splitlines().index("    seed: 8") + 1
    with pytest.raises(ConfigError) as err:
        PipelineSpec.from_text(text, "spec.yaml")
    assert str(err.value) == f"spec.yaml:{line}: duplicate key 'seed'"


def test_long_user_text_is_cut_in_error_messages():
    with pytest.raises(ConfigError) as err:
        PipelineSpec.from_dict(_with(("source", "format"), "x" * 10_000_000), "pipelines")
    message = str(err.value)
    assert len(message) < 200 and message.endswith("… (10,000,000 characters)")
    with pytest.raises(UsageError) as err:
        preset("y" * 10_000)
    assert len(str(err.value)) < 200 and "'yyy" in str(err.value) and "… (10,000 characters)" in str(err.value)
