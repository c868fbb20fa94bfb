"""Does `pipebench diagnose` hold on the code users really have? Every corpus pipeline, end to end, on big data.

For each pipeline of tests/diagnose_corpus (written here) and tests/diagnose_corpus/real (taken from public
repositories), on synthetic data of `--rows` rows laid out two ways (one file; `--files` files), this runs the
diagnosis as `pipebench diagnose` does (fresh worker, default settings) and then checks it from outside, each
check in a fresh process, one at a time:

- time: the diagnosis took at most 2 minutes;
- rows: the rate it reports for the whole pipeline (over its two worker processes) is within 1.5× of the rows/s a
  plain `for element in dataset` loop over the user's own function reads (in each of two fresh processes: warmed
  up, then the median of 4 timed windows, restarting at each epoch's end, rows counted by the label's leading
  dimension; the geometric mean of the two, every window printed; for a diagnosis of a cache's first pass, the
  function called again for each pass and each window whole passes, as diagnose measures them), beyond what that loop's own cost per element
  leaves, read and judged as diagnose's self-check reads and judges its own (pipebench.diagnose.selfcheck: for a
  pipeline that read faster with idle cores kept awake, pipebench.measure.awake, the band is widened by its two
  speeds' factor, since a plain loop's pace decides which it reads; not by its own windows' spread, which widens
  the self-check's band only); a ratio outside that band whose interval reaches into it is undecided, and the loop is read in PLAIN_MORE more processes,
  all of them pooled, and that decides;
- the self-check: whether diagnose's own plain loop over the function, paired with its whole-pipeline windows,
  agreed with it (diagnosis.json's `self_check`);
- every kept rewrite: exported alone (the module pipebench writes, building from the user's file with the rewrite
  written into its calls), imported in a fresh process, it yields the rows the user's function yields over the
  whole data (one epoch, or the first 200,000 rows), and it is faster measured again, beside the user's function,
  in paired interleaved rounds (its interval above 1: "reproduces"; an interval that straddles 1 is measured once
  more in LONGER times the rounds, in a fresh process, and that one decides); its mean there over the claim's lower
  end says whether the export delivers what the diagnosis claimed (at least EXPORTED_FLOOR);
- per-line and per-record parsers (a per-example map right after a text or TFRecord source, or a CSV reader parsing
  rows): a kept rewrite of at least PARSER_GAIN whose export delivers; per-example maps over libsvm or TFRecord: the
  best pipeline diagnose exports against pipebench's own fastest ordering of that format (the aws-sample preset:
  batch → vectorized decode → repeat → prefetch) on the same files and batch size, paired side by side: at least
  0.8×. A pipeline that shuffles single rows before its batch is held to that ordering with the same shuffle (of as
  many records or lines) before its batch: the same semantics, not fewer;
- the profiler: whether the TF Profiler's answer names the same stage as pipebench's bottleneck;
- the machine: how busy it was while each diagnosis measured (diagnosis.json's `machine`: other processes and the
  host's steal); a busy one is diagnosed again at the end of its layout, as a run measures a busy trial again,
  unless the machine is still busy then;
- a TF1 input_fn whose computation after get_next() keeps state from element to element (a counter: no function of
  one element), over a pipeline with a prefetch(500000): `pipebench diagnose` refuses it in one line within 10 s,
  before anything runs.

    python benchmarks/diagnose.py [--rows 200000] [--files 16] [--rounds 5] [--only NAME ...] [--layouts one many]

Run it alone on the machine: it measures. It prints one block per diagnosis and a table at the end.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from diagnose_fixtures import PIPELINES, REAL, case, data_key, derived, path_of  # noqa: E402

from pipebench.diagnose.export import best  # noqa: E402
from pipebench.diagnose.run import diagnose  # noqa: E402
from pipebench.diagnose.selfcheck import band, expected_ratio  # noqa: E402
from pipebench.measure.intervals import Interval, geometric_interval  # noqa: E402
from pipebench.measure.sampler import steal_cpu_sec  # noqa: E402
from pipebench.pipeline.function import parse_function_ref  # noqa: E402

GOAL_SEC = 120.0
RATE_TOLERANCE = 1.5
BEST_ORDERING_FLOOR = 0.8
#: A per-line / per-record parser gets a kept rewrite at least this fast, whose exported module, imported in a fresh
#: process beside the user's function, reads at least EXPORTED_FLOOR of the claim's lower end.
PARSER_GAIN, EXPORTED_FLOOR = 3.0, 0.8
#: The plain loop: warmed up, then PLAIN_WINDOWS windows in PLAIN_SEC; its rate is their median (one stretch of
#: 8 s read 57k rows/s for a pipeline read at 187k in another run: one draw decides nothing).
PLAIN_WARMUP_SEC, PLAIN_SEC, PLAIN_WINDOWS = 3.0, 8.0, 4
#: Plain loops, each a fresh process; the rate is the geometric mean of theirs: a process has its own speed (one
#: TF1 reader's parse map cost 17 CPU-µs per row in one process and 31 in another, idle, 2026-11-29), and diagnose
#: gives its rate over two worker processes too.
PLAIN_PROCESSES = 2
#: A reported rate outside the band whose interval over the plain loop's (Interval.over: the diagnosis's interval
#: over its windows', erring wide) reaches into it is undecided; the plain loop is then read in this many more fresh
#: processes, all pooled. One figure is two draws minutes apart, and some pipelines read at two speeds in one process
#: (real_tft_sentiment_varlen_tf1: 25-35k or 95-136k rows/s for seconds at a time, idle; its two plain loops read
#: 63k and 55k beside a diagnosis of 34k, 2026-12-04), others beside the host's steal (deepray: windows 40k-113k).
PLAIN_MORE = 2
CONTENT_ROWS = 200_000
#: How long the machine is read before a busy diagnosis is measured again.
QUIET_READ_SEC = 5.0
ALL = (*PIPELINES, "tf1_tensors", *REAL)


#: An undecided reproduction is measured once more in this many times the rounds.
LONGER = 3


def _data(folder: Path, rows: int, files: int) -> dict[str, list[str]]:
    from pipebench.synth import SynthSpec, synthesize

    found = {}
    for fmt, compression in (("libsvm", "none"), ("tfrecord", "none"), ("criteo", "none"), ("tfrecord", "gzip")):
        key = fmt if compression == "none" else f"{fmt}-{compression}"
        described = synthesize(SynthSpec(rows=rows, out=folder / key, files=files, format=fmt, seed=7,
                                         compression=compression))
        found[key] = [str(folder / key / f.name) for f in described.files]
    return found


def _kwargs(name: str, data: dict[str, list[str]]) -> dict:
    """Give a pipeline's arguments: its CASE's, its files filled in, and what the benchmark calls it with instead
    (a CASE's "benchmark": the call training makes, where the tests' call differs)."""
    found = case(name)
    return {found["files"]: derived(name, found, data[data_key(found)]), **found["kwargs"],
            **found.get("benchmark", {})}


def _child(*args: str) -> dict:
    """Run this file's child mode in a fresh process; give the JSON it printed last."""
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the child modes: each in a fresh process -------------------------------------------------------------------

def _dataset_of(path: str, kwargs: dict):
    """Give the dataset the function at `path` gives (a TF1 one's behind its iterator; one with TF1 names TF 2 lacks:
    its tf_upgrade_v2 conversion's, what it runs as under TF 2, as diagnose diagnoses it)."""
    from pipebench.pipeline.tf1_capture import dataset_of_tf1
    from pipebench.pipeline.tf1_upgrade import upgrade
    from pipebench.pipeline.user_code import import_user_module

    try:
        return dataset_of_tf1(import_user_module(path).input_fn, **kwargs)
    except AttributeError:
        converted = upgrade(path, Path(tempfile.mkdtemp(prefix="pipebench-bench-upgrade-")))
        return dataset_of_tf1(import_user_module(str(converted.path)).input_fn, **kwargs)


def _rows_of(element) -> int:
    import tensorflow as tf

    leaf = tf.nest.flatten(element[1] if isinstance(element, tuple) and len(element) == 2 else element)[0]
    return int(leaf.shape[0]) if leaf.shape.rank else 1


def child_plain(path: str, kwargs: dict, first_passes: bool = False) -> dict:
    """Read the user's function with a plain Python loop: rows/s after a warm-up, restarting at each epoch's end.
    A spent iterator is kept, not dropped, as diagnose's arms do: dropping one whose pipeline autotunes waits
    0.4-2.5 s for its threads, once per epoch; on 200,000 rows that is every second or so, where a real epoch of
    millions of rows pays it once in minutes. The rate is the rows', not TensorFlow's teardown's.
    `first_passes` (the diagnosis is of a cache's first pass): the function is called again for each pass, and a
    window ends at a pass's end, so each window is whole passes, their start included, as diagnose measures them."""
    import tensorflow as tf

    from pipebench.diagnose.selfcheck import loop_cost

    dataset = _dataset_of(path, kwargs)
    iterator, spent, seen = iter(dataset), [], {}

    def step() -> int:
        nonlocal iterator
        try:
            element = next(iterator)
        except StopIteration:
            spent.append(iterator)  # at its end: its buffers are empty, its threads idle
            iterator = iter(dataset)
            element = next(iterator)
        seen["element"] = element
        return _rows_of(element)

    def one_pass() -> int:  # the function called again, its pass read to its end
        iterator, rows = iter(_dataset_of(path, kwargs)), 0
        spent.append(iterator)
        for element in iterator:
            seen["element"] = element
            rows += _rows_of(element)
        return rows

    read = one_pass if first_passes else step
    start = time.perf_counter()
    while time.perf_counter() - start < PLAIN_WARMUP_SEC:
        read()
    rates = []
    for _ in range(PLAIN_WINDOWS):
        rows, start = 0, time.perf_counter()
        while time.perf_counter() - start < PLAIN_SEC / PLAIN_WINDOWS:
            rows += read()
        rates.append(rows / (time.perf_counter() - start))
    return {"rows_per_sec": statistics.median(rates), "windows": rates,
            "loop_sec": loop_cost(tf, seen["element"]), "rows_per_element": _rows_of(seen["element"])}


def child_content(original: str, rewritten: str, kwargs: dict) -> dict:
    """Compare one epoch (at most CONTENT_ROWS rows) of the rewritten module with the user's function, each built
    afresh under one global seed (as diagnose's content check builds them): the first rows of an endless shuffled
    pipeline are another subset of the data at every unseeded read."""
    import tensorflow as tf

    from pipebench.diagnose import content
    from pipebench.diagnose.check import CONTENT_SEED

    def read(module: str):
        tf.random.set_seed(CONTENT_SEED)
        return content.read_epoch(_dataset_of(module, kwargs), True, CONTENT_ROWS)

    epochs = [read(original), read(original)]
    mine = read(rewritten)
    found = content.compare(*epochs, mine)
    return {"same": found.same_elements, "rows": found.examples, "semantics": found.semantics}


def _preset_dataset(fmt: str, files: list[str], batch_size: int, shuffle: int):
    """Give pipebench's fastest ordering of `fmt` (aws-sample); `shuffle` > 0: with the user's shuffle of that many
    rows kept, as records or lines before the batch (the same semantics)."""
    import dataclasses

    from pipebench.measure.build import build
    from pipebench.pipeline.presets import preset
    from pipebench.pipeline.spec import StageSpec

    spec = preset("aws-sample", format=fmt, files=tuple(files), batch_size=batch_size, epochs=None)
    if shuffle:
        spec = dataclasses.replace(spec, stages=(StageSpec.of("shuffle", buffer_size=shuffle), *spec.stages))
    return build(spec).dataset


def child_pair(a: str, b: str, kwargs: dict, rounds: int, fmt: str = "", batch: int = 0, shuffle: int = 0,
               first_passes: bool = False) -> dict:
    """Measure B against A in paired interleaved rounds (rows/s, B / A); `preset` as A: pipebench's fastest
    ordering of `fmt` on the same files (with a shuffle of `shuffle` rows before its batch, when not 0).
    `first_passes` (the diagnosis is of a cache's first pass): each window is whole passes, the function called
    again for each, as diagnose measures them (a cache's later passes read it from memory)."""
    import tensorflow as tf

    from pipebench.measure.rounds import calibrate, gain, paired_rounds
    from pipebench.pipeline.rows import rows_tensor as element_rows
    from pipebench.measure.windows import MAX_STEPS, Arm
    from pipebench.measure.loops import input_loop

    def arm(name: str, make) -> Arm:
        loop = input_loop(tf, lambda element: element_rows(tf, element, True))
        if first_passes:
            made = Arm(name, lambda: iter(make()), loop, releasable=False, start=False)
            made.steps, made.whole_passes = MAX_STEPS, True
            return made
        dataset = make()
        made = Arm(name, lambda: iter(dataset), loop)
        made.release()
        return made

    files = next(v for v in kwargs.values() if isinstance(v, list))
    first = arm("a", (lambda: _preset_dataset(fmt, files, int(batch), int(shuffle))) if a == "preset"
                else lambda: _dataset_of(a, kwargs))
    second = arm("b", lambda: _dataset_of(b, kwargs))
    calibrate([first, second])
    pairs = paired_rounds(first, [second], rounds, 1.0, 0.5, {}, "benchmark")["b"]
    return dataclasses.asdict(gain(pairs))


# --- the benchmark ------------------------------------------------------------------------------------------------

def _per_example(found, data: str) -> str | None:
    """Give the format of a per-line / per-record pipeline (a per-example map over libsvm or TFRecord), else None.
    `data`: the data set it is given (diagnose_fixtures.data_key): a text reader of raw Criteo or CSV lines has no
    pipebench ordering to be held to (pipebench's libsvm decode asserted on them, 2026-12-02)."""
    source = found.stages[0].params.get("reader")
    maps = [s for s in found.stages if s.kind == "map" and s.inside is None]
    first_map = maps[0] if maps else None
    if first_map is None or found.stages[first_map.index - 1].batched:
        return None
    fmt = {"TextLineDataset": "libsvm", "TFRecordDataset": "tfrecord"}.get(source)
    return fmt if fmt == data else None


def _row_shuffle(found) -> int:
    """Give the rows the user's pipeline shuffles one at a time (an outer shuffle of single examples), 0 without
    one: pipebench's ordering it is held to shuffles as many before its batch."""
    for stage in found.stages:
        size = stage.params.get("buffer_size")
        if stage.kind == "shuffle" and stage.inside is None and not stage.batched:
            if isinstance(size, int):
                return size
            print(f"  (its shuffle {stage.call} has no fixed size: held to the ordering without a shuffle)")
    return 0


def _write_module(found, rewrite, folder: Path, name: str) -> Path | None:
    """Give the module pipebench exports for `rewrite` (its output folder's, built from the patched copy of the
    user's file beside it), or None when it writes none."""
    from pipebench.diagnose.export import write

    folder.mkdir(parents=True, exist_ok=True)
    made = write(found, folder, path_of(name).read_text(), rewrite)
    if made.module is None:
        print(f"  no module for {rewrite.name}: {made.why_not}")
        return None
    return folder / made.module


def _parser(found) -> bool:
    """Tell whether a pipeline parses one line or record at a time: a per-example map right after a text or TFRecord
    source (or a CSV reader that parses rows, make_csv_dataset's)."""
    outer = [s for s in found.stages if s.inside is None]
    readers = {s.params.get("reader") for s in found.stages if s.kind == "source"}
    if "CsvDataset" in readers:
        return True
    maps = [s for s in outer if s.kind == "map"]
    return bool(maps) and not found.stages[maps[0].index - 1].batched and bool(
        readers & {"TextLineDataset", "TFRecordDataset"}) and maps[0].function is not None


def _self_ratio(check) -> str:
    """The self-check's ratio at 95%, and at 90%, the interval its agreement is judged by (pipebench.diagnose.selfcheck)."""
    return check.ratio.text(".2f", unit="×") + (
        "" if check.equivalence is None else f", at 90% {check.equivalence.text('.2f', unit='×')}") + (
        f"; its own windows {check.window_spread:.2f}× apart" if check.window_spread > check.spread else "")


def _rate_holds(row: dict) -> bool:
    """Whether the plain loop's rate over the reported one lies in the self-check's band (pipebench.diagnose.selfcheck),
    widened as the self-check's is by the pipeline's two speeds, where it has them (pipebench.measure.awake)."""
    low, high = band(row["expected"], row["spread"])
    return low <= 1 / row["rate_ratio"] <= high


def _rate_undecided(ratio: Interval, expected: float, spread: float) -> bool:
    """Whether the reported rate over the plain loop's (`ratio`) lies outside the band while its interval reaches into
    it (PLAIN_MORE)."""
    low, high = band(expected, spread)
    outside = not low <= 1 / ratio.mean <= high
    return outside and ratio.decided and 1 / ratio.high <= high and 1 / ratio.low >= low


def run_one(name: str, layout: str, data: dict, work: Path, rounds: int) -> dict:
    kwargs = _kwargs(name, data)
    started = time.monotonic()
    progress = open(work / f"progress-{layout}-{name}.txt", "w")

    def log(text: str) -> None:
        progress.write(f"{time.monotonic() - started:6.1f} s  {text}\n")
        progress.flush()

    found, _ = diagnose(parse_function_ref(f"{path_of(name)}:input_fn"), kwargs, None, work / f"out-{layout}-{name}",
                        rounds, log=log)
    took = time.monotonic() - started
    machine = found.machine
    reported = found.rows_per_sec  # over diagnose's two worker processes (pipebench.diagnose.second)
    stolen, began = steal_cpu_sec(), time.monotonic()
    first_passes = found.passes is not None and found.passes.main == "first"  # the pass diagnose reports

    def plain_loops(processes: int) -> list[dict]:
        return [_child("plain", str(path_of(name)), json.dumps(kwargs), str(int(first_passes)))
                for _ in range(processes)]

    def judged(loops: list[dict]) -> tuple[float, float, Interval]:
        plain = statistics.geometric_mean([loop["rows_per_sec"] for loop in loops])
        # What a Python loop's own cost per element leaves, read as the self-check reads it (one producer).
        expected = expected_ratio(statistics.mean(loop["loop_sec"] for loop in loops), loops[0]["rows_per_element"],
                                  reported.mean)
        windows = geometric_interval([rate for loop in loops for rate in loop["windows"]])
        return plain, expected, reported.over(windows)

    loops = plain_loops(PLAIN_PROCESSES)
    plain, expected, ratio = judged(loops)
    first_said = None
    spread = 1.0 if found.self_check is None else found.self_check.spread
    if _rate_undecided(ratio, expected, spread):
        first_said = f"{ratio.text('.2f', unit='×')} over {len(loops)} processes, undecided"
        loops += plain_loops(PLAIN_MORE)
        plain, expected, ratio = judged(loops)
    plain_steal = 100.0 * (steal_cpu_sec() - stolen) / (time.monotonic() - began)
    check = found.self_check
    row = {"name": name, "layout": layout, "seconds": took, "reported": reported.mean, "plain": plain,
           "rate_ratio": reported.mean / plain, "rate_first": first_said, "spread": spread,
           "awake": None if found.awake is None else found.awake.text(".2f", unit="×"),
           "expected": expected, "profiler": found.profiler.agrees, "kept": [], "best": None,
           "tf1": found.tf1, "stages": len(found.stages), "others": machine.others_cpu_pct, "steal": machine.steal_pct,
           "busy": machine.busy, "plain_steal": plain_steal, "self_check": "absent" if check is None else check.agrees,
           "self_ratio": None if check is None else _self_ratio(check), "parser": _parser(found),
           "passes": None if found.passes is None else found.passes.main}
    print(f"\n## {name} ({layout}): diagnosed in {took:.0f} s ({'BUSY: ' if machine.busy else ''}others "
          f"{machine.others_cpu_pct:.0f}% of a vCPU, the host's steal {machine.steal_pct:.0f}%); reported {reported.text(',.0f')} rows/s (by worker process: "
          f"{'; '.join(p.text(',.0f') for p in found.process_rows_per_sec)}), plain loop "
          f"{plain:,.0f} rows/s (by process, the median of its windows: " + "; ".join(
              f"{loop['rows_per_sec']:,.0f} of {', '.join(f'{r:,.0f}' for r in loop['windows'])}" for loop in loops)
          + f"; the host's steal "
          f"{plain_steal:.0f}% of a vCPU) "
          f"({ratio.text('.2f', unit='×')}" + (f"; {first_said}" if first_said else "")
          + f"; a Python loop's own cost leaves {expected:.2f}×; idle cores kept awake: "
          + (found.awake.text('.2f', unit='×') if found.awake else str(found.awake_note))
          + (f", two speeds, the band widened by {spread:.2f}×" if spread > 1 else "")
          + f"); profiler {found.profiler.answer[:160]} "
          f"(agrees: {found.profiler.agrees})")
    for rewrite in [*found.rewrites, *([found.combined] if found.combined else [])]:
        if not rewrite.kept:
            continue
        module = _write_module(found, rewrite, work / f"{layout}-{name}-{rewrite.kind}-{rewrite.stage}", name)
        if module is None:
            row["kept"].append({"rewrite": rewrite.name, "gain": rewrite.gain.text(".2f", unit="×"), "low":
                                rewrite.gain.low, "again": "no module", "reproduces": False, "same_rows": None,
                                "exported": None})
            continue
        same = _child("content", str(path_of(name)), str(module), json.dumps(kwargs))
        pair = "passes" if first_passes else "pair"  # the pass diagnose reports
        again = Interval(**_child(pair, str(path_of(name)), str(module), json.dumps(kwargs), str(rounds)))
        said = again.text(".2f", unit="×")
        if again.low is not None and again.low <= 1.0 < again.high:  # undecided: a small gain needs more rounds
            again = Interval(**_child(pair, str(path_of(name)), str(module), json.dumps(kwargs),
                                      str(LONGER * rounds)))
            said += f", undecided; in {LONGER * rounds} fresh rounds {again.text('.2f', unit='×')}"
        holds = again.low is not None and again.low > 1.0
        exported = again.mean / rewrite.gain.low  # the exported module's gain over the claim's lower end
        row["kept"].append({"rewrite": rewrite.name, "gain": rewrite.gain.text(".2f", unit="×"), "low": rewrite.gain.low,
                            "mean": rewrite.gain.mean, "again": said, "reproduces": holds, "same_rows": same["same"],
                            "exported": exported})
        print(f"  KEPT {rewrite.name}: {rewrite.gain.text('.2f', unit='×')}; the exported module, imported in a "
              f"fresh process, beside the user's function: {said} ({exported:.2f} of the claim's lower end): "
              f"{'reproduces' if holds else 'DOES NOT reproduce'}; rows over {same['rows']:,}: "
              f"{'same' if same['same'] else 'DIFFER: ' + str(same['semantics'])}")
    per_example = _per_example(found, data_key(case(name)))
    if per_example is not None:
        chosen = best(found)
        module = (_write_module(found, chosen, work / f"{layout}-{name}-best", name) if chosen else None) \
            or path_of(name)
        batch = found.stages[[s.kind for s in found.stages].index("batch")].params["batch_size"]
        shuffle = _row_shuffle(found)
        ratio = Interval(**_child("pair", "preset", str(module), json.dumps(kwargs), str(rounds), per_example,
                                  str(batch), str(shuffle)))
        row["best"] = {"format": per_example, "ratio": ratio.mean, "text": ratio.text(".2f", unit="×"),
                       "what": chosen.name if chosen else "the original (nothing kept)", "shuffle": shuffle}
        print(f"  best ({row['best']['what']}) vs pipebench's fastest {per_example} ordering"
              + (f" with the user's shuffle of {shuffle:,} rows before its batch" if shuffle else "")
              + f": {ratio.text('.2f', unit='×')}")
    sys.stdout.flush()
    return row


REFUSED_TF1 = """import tensorflow as tf


def input_fn(files):
    dataset = tf.data.TextLineDataset(files).map(lambda line: tf.strings.length(line)).prefetch(500000)
    counter = tf.Variable(0)
    features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    return features + counter.assign_add(1)
"""


def refusal(work: Path, data: dict) -> float:
    """Time `pipebench diagnose` refusing a TF1 input_fn whose computation after get_next() keeps state from element
    to element (a counter), over a pipeline with a prefetch(500000); give the seconds."""
    module = work / "tf1_computes.py"
    module.write_text(REFUSED_TF1)
    started = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).with_name("pipebench")), "diagnose", f"{module}:input_fn",
                           "--set", f"files={json.dumps(data['libsvm'])}", "--out", str(work / "refused")],
                          capture_output=True, text=True, timeout=600)
    took = time.monotonic() - started
    print(f"TF1 refusal: exit {done.returncode} in {took:.1f} s: {done.stderr.strip()[-300:]}")
    return took


def _machine(row: dict) -> str:
    return (f"{'BUSY ' if row['busy'] else ''}{row['others']:.0f} ({row['steal']:.0f})"
            + (", measured again" if row.get("again") else ""))


def _row(name: str, layout: str, data: dict, work: Path, rounds: int) -> dict:
    try:
        return run_one(name, layout, data, work, rounds)
    except Exception as err:  # noqa: BLE001 — one pipeline's failure is a row of the table, not the end
        print(f"\n## {name} ({layout}): FAILED: {type(err).__name__}: {str(err)[-600:]}")
        return {"name": name, "layout": layout, "failed": str(err)[-300:]}


def _again(rows: list[dict], layout: str, data: dict, work: Path, rounds: int) -> None:
    """Diagnose each of the layout's busy diagnoses once more at its end, by the rule a run follows for a busy trial
    (pipebench.measure.busy.BusyRule: none once the machine reads busy then; the second stands for the first)."""
    from pipebench.config import resolve_block
    from pipebench.measure.busy import BusyRule
    from pipebench.measure.sampler import others_busy_pct

    rule = BusyRule(float(resolve_block("measurement", {})["busy_other_cpu_pct"]),
                    lambda: others_busy_pct(QUIET_READ_SEC))
    for index, row in enumerate(rows):
        if row.get("layout") != layout or not row.get("busy"):
            continue
        if not rule.may_measure_again():
            print(f"\n{row['name']} ({layout}) was busy; not measured again: {rule.skipped}")
            continue
        print(f"\n{row['name']} ({layout}) was busy (others {row['others']:.0f}% of a vCPU): measured again")
        (work / "again").mkdir(exist_ok=True)
        rows[index] = {**_row(row["name"], layout, data, work / "again", rounds), "again": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=ALL)
    parser.add_argument("--layouts", nargs="+", choices=("one", "many"), default=["one", "many"])
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, *rest = args.child
        if mode == "plain":
            print(json.dumps(child_plain(rest[0], json.loads(rest[1]), bool(int(rest[2])))))
        elif mode == "passes":
            print(json.dumps(child_pair(rest[0], rest[1], json.loads(rest[2]), int(rest[3]), first_passes=True)))
        elif mode == "content":
            print(json.dumps(child_content(rest[0], rest[1], json.loads(rest[2]))))
        else:
            print(json.dumps(child_pair(rest[0], rest[1], json.loads(rest[2]), int(rest[3]),
                                        *(rest[4:5] or [""]), *(int(x) for x in rest[5:7]))))
        return
    work = Path(tempfile.mkdtemp(prefix="pipebench-diagnose-bench-"))
    print(f"work folder {work}; {args.rows:,} rows, layouts {args.layouts} ({args.files} files for many); "
          f"{len(os.sched_getaffinity(0))} vCPUs; load average {os.getloadavg()[0]:.2f} at the start")
    rows, refused = [], None
    for layout in args.layouts:
        data = _data(work / f"data-{layout}", args.rows, 1 if layout == "one" else args.files)
        if refused is None:
            refused = refusal(work, data)
        for name in args.only or ALL:
            rows.append(_row(name, layout, data, work, args.rounds))
        _again(rows, layout, data, work, args.rounds)
    print("\n| pipeline | layout | seconds | others (steal), % of a vCPU | reported / plain loop | self-check | "
          "kept rewrites: claim; exported module in a fresh process (its mean / the claim's lower end) | best vs "
          "pipebench's | profiler agrees |\n|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        if "failed" in row:
            print(f"| {row['name']} | {row['layout']} | FAILED | | | | | | |")
            continue
        kept = "; ".join(f"{k['rewrite']} {k['gain']}; {k['again']}"
                         + (f" ({k['exported']:.2f})" if k.get("exported") else "")
                         + ("" if k["same_rows"] is not False else ", ROWS DIFFER") for k in row["kept"]) or "none"
        best_text = f"{row['best']['text']} ({row['best']['format']})" if row["best"] else "—"
        check = {True: "agrees", False: "DISAGREES", None: "inconclusive", "absent": "—"}[row["self_check"]]
        print(f"| {row['name']} | {row['layout']} | {row['seconds']:.0f} | {_machine(row)} | {row['rate_ratio']:.2f} "
              f"(loop cost leaves {row['expected']:.2f}"
              + (f"; two speeds, {row['spread']:.2f}× apart" if row["spread"] > 1 else "") + (f"; {row['rate_first']}, then over {PLAIN_PROCESSES + PLAIN_MORE}"
                                                       if row.get("rate_first") else "") + ")"
              + ("" if _rate_holds(row) else " MISSES")
              + f" | {check} {row['self_ratio'] or ''} | {kept} | {best_text} | {row['profiler']} |")
    ok = [r for r in rows if "failed" not in r]
    agree = [r for r in ok if r["profiler"] is not None]
    kept = [k for r in ok for k in r["kept"]]
    parsers = [r for r in ok if r["parser"]]
    served = [r for r in parsers if any(k.get("mean", 0) >= PARSER_GAIN and k["reproduces"] and k["same_rows"]
                                        and (k.get("exported") or 0) >= EXPORTED_FLOOR for k in r["kept"])]
    print(f"\ngoals: {sum(r['seconds'] <= GOAL_SEC for r in ok)}/{len(rows)} diagnoses ≤ {GOAL_SEC:.0f} s and "
          f"exit 0 ({len(rows) - len(ok)} failed); "
          f"{sum(_rate_holds(r) for r in ok)}/{len(ok)} reported rates within {RATE_TOLERANCE}× of the benchmark's "
          f"plain loop (beyond what the loop's own cost per element leaves; the band widened by the two speeds of "
          f"{sum(r['spread'] > 1 for r in ok)} read faster with idle cores kept awake); the self-check agrees on "
          f"{sum(r['self_check'] is True for r in ok)}/{len(ok)}, inconclusive on "
          f"{sum(r['self_check'] is None for r in ok)}; "
          f"{len(served)}/{len(parsers)} per-line / per-record parsers get a kept rewrite ≥ {PARSER_GAIN:.0f}× whose "
          f"exported module reads ≥ {EXPORTED_FLOOR}× of the claim's lower end (not: "
          f"{', '.join(r['name'] for r in parsers if r not in served) or 'none'}); "
          f"{sum(k['reproduces'] and k['same_rows'] for k in kept)}/{len(kept)} kept rewrites reproduce with the same "
          f"rows; {sum(1 for k in kept if k.get('low') is not None and k['low'] <= 1.0)} claims whose interval holds 1; "
          f"{sum(r['best']['ratio'] >= BEST_ORDERING_FLOOR for r in ok if r['best'])}/"
          f"{sum(1 for r in ok if r['best'])} per-example pipelines ≥ {BEST_ORDERING_FLOOR}× pipebench's fastest "
          f"ordering; the profiler agrees on {sum(r['profiler'] for r in agree)}/{len(agree)}; "
          f"{sum(r['busy'] for r in ok)} busy (measured beside other load or the host's steal); the TF1 refusal "
          f"took {refused:.1f} s (≤ 10 s)")


if __name__ == "__main__":
    main()
