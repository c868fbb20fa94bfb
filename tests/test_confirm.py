"""Search that identifies: ordinal knobs, the confirmation phase (candidates and references raced in
interleaved rounds, counted in the budget), and a study that ends like the grid (importances only
when they mean something, the winner with its settings, interval and paired gains).

The real planner and the real trial loop run here; only the worker is replaced, by
pipebench.testing.fake_measure (no TensorFlow, nothing timed)."""
from __future__ import annotations

import io
import json
import statistics

import pytest
from report_fixtures import machine

from pipebench.config import parse_experiment
from pipebench.datasets import DataSet
from pipebench.errors import ConfigError
from pipebench.measure.facts import MachineFacts
from pipebench.measure.trial import TrialRecord, TrialStatus
from pipebench.results import IMPORTANCES_FILE, SUMMARY_FILE
from pipebench.results.configurations import configurations, paired_ratio
from pipebench.results.run_folder import RunFolder
from pipebench.search.loop import run_trials
from pipebench.testing import fake_measure, windows_at

optuna = pytest.importorskip("optuna")

TWO_VCPUS = MachineFacts.from_json(machine(vcpus=2, physical_cores=2), "machine.json")


def _experiment(tmp_path, formats=("tfrecord",), **search) -> object:
    return parse_experiment({
        "name": "confirm", "modes": ["input"], "grid": {"batch_size": [256]},
        "pipelines": {"presets": ["aws-sample"], "formats": list(formats)}, "data": {"formats": list(formats)},
        "search": {"driver": "optuna", "sampler": "random", "seed": 0, "pruner": "none", **search},
        "budget": {"max_failure_rate": 0.5}, "results": str(tmp_path / "results")})


def _data(tmp_path, formats=("tfrecord",)) -> DataSet:
    (tmp_path / "data").mkdir(exist_ok=True)
    files = {fmt: [str(tmp_path / "data" / f"part-0.{fmt}")] for fmt in formats}
    for names in files.values():
        open(names[0], "wb").close()
    return DataSet(files, fingerprint="data", rows=1000, rows_from="test")


def _study(experiment, data, tmp_path, name="run"):
    from pipebench.search.optuna_driver import OptunaPlanner, open_storage, open_study
    from pipebench.search.plan import make_plan

    path = tmp_path / name
    path.mkdir(parents=True)
    run = RunFolder(path, TWO_VCPUS, data.facts())
    plan = make_plan(experiment, data, TWO_VCPUS)
    logged: list[str] = []
    study = open_study(experiment, plan, open_storage(None, run.path), log=logged.append)
    return OptunaPlanner(study, plan, log=logged.append), run, logged


# --- ordinal knobs ---

def test_numeric_choices_are_suggested_as_ordered_indices_and_everything_else_as_categories():
    """Regression: every choice list was suggest_categorical, so TPE could not learn that 2048 lies beyond 512."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    from pipebench.config.space import parse_space
    from pipebench.search.plan import encode, suggest

    space = parse_space({"batch_size": [2048, 128, 512], "intra_op_threads": [1, 2],
                         "stage.prefetch.buffer_size": ["AUTOTUNE", 4], "env.OMP_NUM_THREADS": [1, 2],
                         "pipeline": ["aws-sample"], "option.threading.private_threadpool_size": {"low": 1, "high": 8,
                                                                                                   "log": True}})
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial(encode({"batch_size": 512, "intra_op_threads": 2}, space))
    trial = study.ask()
    values = {name: suggest(trial, dim) for name, dim in space.items()}
    assert values["batch_size"] == 512 and values["intra_op_threads"] == 2
    assert trial.params["batch_size"] == 1, "ascending order: 128, 512, 2048"
    distributions = trial.distributions
    assert distributions["batch_size"] == IntDistribution(0, 2)
    assert distributions["intra_op_threads"] == IntDistribution(0, 1)
    assert distributions["option.threading.private_threadpool_size"] == IntDistribution(1, 8, log=True)
    # AUTOTUNE is no number, env values are strings, a pinned pipeline is not asked for at all
    assert isinstance(distributions["stage.prefetch.buffer_size"], CategoricalDistribution)
    assert isinstance(distributions["env.OMP_NUM_THREADS"], CategoricalDistribution)
    assert "pipeline" not in distributions


def test_a_study_of_ordinal_knobs_keeps_values_in_rows_and_settings(tmp_path):
    experiment = _experiment(tmp_path, n_trials=3, confirm_top=0, enqueue_reference=False,
                             space={"batch_size": [128, 512, 2048]})
    data = _data(tmp_path)
    planner, run, _ = _study(experiment, data, tmp_path)
    result = run_trials(planner, run, experiment, fake_measure(lambda spec: float(spec.batch_size)),
                        stream=io.StringIO())
    rows = {r.optuna_trial_number: r for r in result.rows}
    assert rows and all(r.batch_size in (128, 512, 2048) for r in rows.values())
    for trial in planner.study.trials:  # the study holds indices; rows and settings hold values
        value = (128, 512, 2048)[trial.params["batch_size"]]
        assert trial.user_attrs["settings"]["batch_size"] == value
        assert trial.number not in rows or rows[trial.number].batch_size == value


# --- the confirmation phase ---

def _misleading(first: dict[int, float], true: dict[int, float]):
    """Give a measure whose exploration draw (repeat 0) of each batch size is `first`, and whose
    confirmation rounds scatter ±2% around `true`."""
    wobble = {256: [1.0, 0.98, 1.02, 1.01], 512: [1.0, 1.02, 0.98, 1.01]}

    def rate(spec) -> float:
        if spec.repeat == 0:
            return first[spec.batch_size]
        return true[spec.batch_size] * wobble[spec.batch_size][spec.repeat]
    return rate


def test_confirmation_picks_the_better_configuration_when_single_draws_point_the_other_way(tmp_path):
    """Regression: the study's best single draw was the answer (the winner's curse); now fresh,
    interleaved rounds decide. Batch 512 is truly faster (1000 vs 900), but its one exploration
    draw (850) lost to batch 256's lucky one (950)."""
    experiment = _experiment(tmp_path, n_trials=9, confirm_top=2, confirm_rounds=3, enqueue_reference=False,
                             space={"batch_size": [256, 512], "intra_op_threads": [1]})
    data = _data(tmp_path)
    planner, run, logged = _study(experiment, data, tmp_path)
    result = run_trials(planner, run, experiment, fake_measure(_misleading({256: 950.0, 512: 850.0},
                                                                           {256: 900.0, 512: 1000.0})),
                        stream=io.StringIO())
    explored = [r for r in result.rows if r.repeat == 0]
    assert max(explored, key=lambda r: r.examples_per_sec_median).batch_size == 256
    confirming = [r for r in result.rows if r.repeat > 0]
    assert sorted((r.batch_size, r.repeat) for r in confirming) == [(b, k) for b in (256, 512) for k in (1, 2, 3)]
    saved = json.loads((run.path / IMPORTANCES_FILE).read_text())
    winner = saved["winner"]
    assert winner["settings"]["batch_size"] == "512 examples"
    assert winner["examples_per_sec"]["mean"] == pytest.approx(1000.0 * (1.02 * 0.98 * 1.01) ** (1 / 3))  # geometric
    assert winner["examples_per_sec"]["low"] < winner["examples_per_sec"]["mean"] < winner["examples_per_sec"]["high"]
    assert len(winner["trial_ids"]) == 3 and all(t.startswith("confirm-") for t in winner["trial_ids"])
    # the rounds pair like the grid's repeats: the report sees batch 512 faster than 256 with an interval
    by_batch = {c.rows[0].batch_size: c for c in configurations(result.rows)}
    ratio = paired_ratio(by_batch[512], by_batch[256])
    assert ratio.n == 3 and ratio.decided  # the three rounds; the exploration trials ran alone, in no round
    assert any(line.startswith("Winner: **candidate 2**") for line in logged), logged


def _stalling(rounds_wobble: dict[int, float]):
    """Give a measure whose batch-256 trials run at 100k examples/s but stall to 10k in two of five windows (a
    refill), and whose batch-512 trials run at 60k steadily; each round scales both alike.

    Batch 256's median (100k) beats batch 512 (60k); its geometric mean over the windows (39.8k) does not."""
    def record(spec) -> TrialRecord:
        rates = [100_000.0, 10_000.0, 100_000.0, 10_000.0, 100_000.0] if spec.batch_size == 256 else [60_000.0] * 5
        rates = [r * rounds_wobble[spec.repeat] for r in rates]
        return TrialRecord(TrialStatus.OK, examples_per_sec_median=statistics.median(rates), windows=len(rates),
                           stable=False, window_rates=tuple(rates), windows_measured=windows_at(spec.mode, rates),
                           rounds=len(rates), rounds_cap_hit=False)
    return record


def test_a_search_and_the_report_of_its_rows_name_the_same_winner(tmp_path):
    """Regression: the race ranked by the worker's median and the report by the geometric mean over windows, so a
    configuration whose windows stall (median 100k, geometric mean 40k) won the search while the report called the
    steady one (60k) fastest. Both now rank by one statistic over the rounds the configurations share."""
    from pipebench.report.action import Baseline, action
    from pipebench.results.configurations import fastest

    experiment = _experiment(tmp_path, n_trials=9, confirm_top=2, confirm_rounds=3, enqueue_reference=False,
                             space={"batch_size": [256, 512], "intra_op_threads": [1]})
    planner, run, logged = _study(experiment, _data(tmp_path), tmp_path)
    measure = fake_measure(_stalling({0: 1.0, 1: 1.02, 2: 0.97, 3: 1.01}))
    result = run_trials(planner, run, experiment, measure, stream=io.StringIO())
    winner = json.loads((run.path / IMPORTANCES_FILE).read_text())["winner"]
    assert winner["settings"]["batch_size"] == "512 examples", winner
    best = fastest(configurations(result.rows))
    assert best.configuration_id == winner["configuration_id"] and best.label["batch_size"] == 512
    summary = (run.path / SUMMARY_FILE).read_text()
    first = next(line for line in summary.splitlines() if line.startswith("| input |"))
    assert "| 512 |" in first and "fastest" in first
    stalling = next(c for c in configurations(result.rows) if c.label["batch_size"] == 256)
    said = action(result.rows, Baseline(stalling.configuration_id), run.path)  # `run --baseline CONFIGURATION_ID`
    # batch 256 left the race after two rounds: the gain is paired over those
    assert said.startswith("Use aws-sample on TFRecord: it reads 1.51× (") and "paired over 2 rounds" in said, said
    assert "it changes batch 256 → 512" in said


def test_references_run_on_the_format_of_the_candidates_they_are_compared_with(tmp_path):
    """Regression: the reference deck ran on libsvm because libsvm was listed first, and the 'gain'
    over it was mostly the format's."""
    formats = ("libsvm", "tfrecord")
    experiment = _experiment(tmp_path, formats, n_trials=14, confirm_top=1, confirm_rounds=2,
                             space={"pipeline": ["aws-sample:libsvm", "aws-sample:tfrecord"],
                                    "batch_size": [256, 512]})
    data = _data(tmp_path, formats)

    specs = {}

    def rate(spec) -> float:
        specs[spec.trial_id] = spec
        speed = 5000.0 if spec.label.format == "tfrecord" else 1000.0
        return speed * spec.batch_size / 512 * (1 + (spec.threads.intra or 0) / 100) * (1 + spec.repeat / 1000)

    planner, run, _ = _study(experiment, data, tmp_path)
    result = run_trials(planner, run, experiment, fake_measure(rate), stream=io.StringIO())
    study = planner.study
    raced = [t for t in study.trials if t.user_attrs.get("confirm_round")]
    references = {t.user_attrs["contender"] for t in raced} - {"candidate 1"}
    assert references == {"reference deck", "TF defaults", "AUTOTUNE everywhere"}
    rows = {r.optuna_trial_number: r for r in result.rows}
    for trial in raced:
        row = rows[trial.number]
        assert row.format == "tfrecord", (trial.user_attrs["contender"], row.format)
        assert row.batch_size == (512 if trial.user_attrs["contender"] == "candidate 1" else 256)
    deck = [rows[t.number] for t in raced if t.user_attrs["contender"] == "reference deck"]
    assert {(r.intra_op_threads, r.inter_op_threads) for r in deck} == {(2, 2)}
    autotune = [rows[t.number] for t in raced if t.user_attrs["contender"] == "AUTOTUNE everywhere"]
    assert all(specs[r.trial_id].pipeline_spec["source"]["num_parallel_reads"] == "AUTOTUNE" for r in autotune)
    gains = json.loads((run.path / IMPORTANCES_FILE).read_text())["winner"]["gains"]
    assert list(gains) == ["reference deck", "TF defaults", "AUTOTUNE everywhere"]
    for gain in gains.values():  # batch 512 against the references' 256, all on TFRecord
        assert gain["ratio"]["mean"] == pytest.approx(2.0, rel=0.03) and gain["verdict"] == "faster"


def test_the_budget_counts_confirmation_trials(tmp_path):
    experiment = _experiment(tmp_path, n_trials=16, confirm_top=2, confirm_rounds=3,
                             space={"batch_size": [64, 128, 256, 512, 1024, 2048]})
    data = _data(tmp_path)
    planner, run, logged = _study(experiment, data, tmp_path)
    stream = io.StringIO()
    result = run_trials(planner, run, experiment, fake_measure(lambda spec: float(spec.batch_size)), stream=stream)
    confirming = [r for r in result.rows if r.repeat > 0]
    assert confirming and len(result.rows) <= 16
    assert len(result.rows) - len(confirming) == 4, "16 trials less the phase's 2 × 3 + 2 × 3 references"
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[1/16] ") and all("/16]" in line for line in lines)
    assert any("contenders" in line and "12 trials at most" in line for line in logged), logged
    # budget.max_trials stops a study inside its confirmation phase like anywhere else
    capped = parse_experiment({**experiment.resolved, "budget": {**experiment["budget"], "max_trials": 6},
                               "search": {**experiment["search"], "study_name": "capped"}})
    planner, run, _ = _study(capped, data, tmp_path, "capped")
    result = run_trials(planner, run, capped, fake_measure(lambda spec: float(spec.batch_size)), stream=io.StringIO())
    assert len(result.rows) == 6 and result.stopped == "budget.max_trials (6) reached"
    saved = json.loads((run.path / IMPORTANCES_FILE).read_text())
    assert saved["winner"] is None
    assert saved["winner_withheld"] == "the run stopped before a contender finished two confirmation rounds"
    # resumed, the study's own record of the race (not the stopped planner) carries it to its end
    from pipebench.search.optuna_driver import OptunaPlanner, open_storage, open_study

    resumed = parse_experiment({**capped.resolved, "budget": {**capped["budget"], "max_trials": None}})
    study = open_study(resumed, planner.plan, open_storage(None, run.path), log=lambda _: None)
    result = run_trials(OptunaPlanner(study, planner.plan, log=lambda _: None), run, resumed,
                        fake_measure(lambda spec: float(spec.batch_size)), stream=io.StringIO())
    assert len(result.rows) <= 16 and [r.repeat for r in result.rows].count(1) == 5
    assert json.loads((run.path / IMPORTANCES_FILE).read_text())["winner"]["contender"] == "candidate 1"


def test_too_few_trials_for_the_confirmation_phase_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^search\.n_trials: 10 leaves 0 trials to explore after the confirmation "
                                          r"phase's 12 \(confirm_rounds 3 × confirm_top 2 \+ 2 × 3 references\); "
                                          r"give at least 15"):
        parse_experiment({"name": "x", "search": {"driver": "optuna", "n_trials": 10}})
    with pytest.raises(ConfigError, match=r"search\.confirm_rounds: must be in \[2, 100\], not 1"):
        parse_experiment({"name": "x", "search": {"driver": "optuna", "confirm_rounds": 1}})
    parse_experiment({"name": "x", "search": {"driver": "optuna", "n_trials": 10, "confirm_top": 0}})


def test_a_race_of_one_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^search\.confirm_top: 1 with search\.enqueue_reference: false races one "
                                          r"configuration alone"):
        parse_experiment({"name": "x", "search": {"driver": "optuna", "confirm_top": 1, "enqueue_reference": False}})
    parse_experiment({"name": "x", "search": {"driver": "optuna", "confirm_top": 1}})  # raced against the references


def test_a_round_enqueued_twice_measures_each_seat_once(tmp_path):
    """Two workers finding the exploration done at the same moment may both enqueue round 1: the
    lower-numbered trial of each seat is measured, the other failed as surplus, unmeasured."""
    from pipebench.search import slots

    experiment = _experiment(tmp_path, n_trials=9, confirm_top=2, confirm_rounds=3, enqueue_reference=False,
                             space={"batch_size": [256, 512], "intra_op_threads": [1]})
    data = _data(tmp_path)
    planner, run, _ = _study(experiment, data, tmp_path)
    real = slots.enqueue_round

    def twice(study, round_number, names, contenders, seed):
        real(study, round_number, names, contenders, seed)
        if round_number == 1:
            real(study, round_number, names, contenders, seed)

    slots.enqueue_round = twice
    try:
        result = run_trials(planner, run, experiment, fake_measure(_misleading({256: 950.0, 512: 850.0},
                                                                               {256: 900.0, 512: 1000.0})),
                            stream=io.StringIO())
    finally:
        slots.enqueue_round = real
    confirming = [r for r in result.rows if r.repeat > 0]
    assert sorted((r.batch_size, r.repeat) for r in confirming) == [(b, k) for b in (256, 512) for k in (1, 2, 3)]
    surplus = [t for t in planner.study.trials if t.user_attrs.get("surplus")]
    assert len(surplus) == 2 and all(t.state.name == "FAIL" for t in surplus)


# --- how a study ends ---

def test_importances_are_withheld_below_the_threshold_and_given_above_it(tmp_path):
    from pipebench.search.optuna_driver import MIN_TRIALS_FOR_IMPORTANCES

    space = {"batch_size": {"low": 16, "high": 4096, "log": True}, "intra_op_threads": [1, 2]}
    few = _experiment(tmp_path, n_trials=15, space=space)
    data = _data(tmp_path)
    planner, run, logged = _study(few, data, tmp_path, "few")
    run_trials(planner, run, few, fake_measure(lambda spec: float(spec.batch_size)), stream=io.StringIO())
    saved = json.loads((run.path / IMPORTANCES_FILE).read_text())
    why = saved["importances"]["examples_per_sec"]["unavailable"]
    assert why.startswith("withheld: 3 exploration trials finished") and f"({MIN_TRIALS_FOR_IMPORTANCES} trials)" in why
    assert any(why in line for line in logged)
    many = _experiment(tmp_path, n_trials=MIN_TRIALS_FOR_IMPORTANCES, confirm_top=0, enqueue_reference=False,
                       space=space, study_name="many")
    planner, run, _ = _study(many, data, tmp_path, "many")
    run_trials(planner, run, many, fake_measure(lambda spec: float(spec.batch_size)), stream=io.StringIO())
    found = json.loads((run.path / IMPORTANCES_FILE).read_text())["importances"]["examples_per_sec"]
    assert set(found) == {"batch_size", "intra_op_threads"} and found["batch_size"] > found["intra_op_threads"]


def test_the_winner_is_recorded_with_settings_interval_and_gains_and_summary_md_shows_it(tmp_path):
    experiment = _experiment(tmp_path, n_trials=14, confirm_top=1, confirm_rounds=3,
                             space={"batch_size": [256, 512, 1024]})
    data = _data(tmp_path)
    planner, run, logged = _study(experiment, data, tmp_path)
    wobble = {0: 1.0, 1: 1.03, 2: 0.97, 3: 1.01}
    run_trials(planner, run, experiment, fake_measure(lambda spec: spec.batch_size * wobble[spec.repeat]),
               stream=io.StringIO())
    saved = json.loads((run.path / IMPORTANCES_FILE).read_text())
    winner = saved["winner"]
    assert winner["contender"] == "candidate 1" and winner["configuration_id"]
    settings = winner["settings"]
    assert settings["pipeline"].startswith("aws-sample (tfrecord, file mode, ")
    assert settings["batch_size"] == "1,024 examples" and settings["intra_op_threads"] == "TF's default"
    assert settings["stage.decode.num_parallel_calls"] == "AUTOTUNE" and settings["env.KMP_AFFINITY"] == "unset"
    assert set(winner["examples_per_sec"]) == {"mean", "low", "high", "n"}  # the interval's one JSON shape
    # the references (batch 256) ran two rounds beside the winner, then left the race
    assert winner["left_the_race"] == {"reference deck": 2, "TF defaults": 2, "AUTOTUNE everywhere": 2}
    for gain in winner["gains"].values():
        # over the windows' geometric means, of whole examples (1,054.72 timed as 1,055): 4.0 to within 0.1%
        ratio = gain["ratio"]
        assert ratio["mean"] == pytest.approx(4.0, rel=1e-3) and ratio["low"] <= ratio["mean"] <= ratio["high"]
        assert ratio["n"] == 2
        assert gain["verdict"] == "faster"
    summary = (run.path / SUMMARY_FILE).read_text()
    assert "## Winner of the search" in summary and "- batch_size: 1,024 examples" in summary
    assert "- against TF defaults: 4.00× (" in summary
    assert any(line.startswith("- against reference deck: 4.00×") for line in logged)


def test_a_search_does_not_measure_busy_trials_again_outside_its_budget(tmp_path):
    """The live check ran 31 trials for a budget of 24: busy exploration trials were measured again at the
    end, trials the study never heard of. The confirmation race is the search's own re-measurement."""
    import dataclasses

    from pipebench.measure.sampler import Usage

    experiment = _experiment(tmp_path, n_trials=3, confirm_top=0, enqueue_reference=False,
                             space={"batch_size": [128, 512, 2048]})
    assert experiment["measurement"]["remeasure_busy"] is True  # the default the grid uses
    planner, run, _ = _study(experiment, _data(tmp_path), tmp_path)
    quiet = fake_measure(lambda spec: float(spec.batch_size))

    def busy(*args, **kwargs):
        outcome = quiet(*args, **kwargs)
        usage = Usage(**{f.name: None for f in dataclasses.fields(Usage)} | {"samples": 3, "other_cpu_pct_median": 95.0})
        return dataclasses.replace(outcome, usage=usage)
    result = run_trials(planner, run, experiment, busy, stream=io.StringIO(), busy_now=lambda: 0.0)
    assert 1 <= len(result.rows) <= 3 and all(r.busy_machine for r in result.rows)  # duplicates are told, not run
    assert not any(r.remeasure_of for r in result.rows)


def test_a_round_the_budget_cannot_hold_whole_races_the_leader_and_its_nearest_challenger():
    """Regression (live check of 2026-11-23, seed 1): a reference led after two rounds, so three contenders
    went on, one more round of three did not fit the two trials left, and the race ended with 22 of 24
    trials spent and the leader decided on two rounds. Now the leader and the nearest challenger race on."""
    from pipebench.search.confirm import Contender, Race

    names = ("candidate 1", "candidate 2", "reference deck")
    contenders = {name: Contender(name, {"batch_size": 512}, f"config-{i}") for i, name in enumerate(names)}
    race = Race(contenders, rounds={1: list(names), 2: list(names)}, budget=8,
                values={"candidate 1": {1: 500.0, 2: 520.0}, "candidate 2": {1: 430.0, 2: 560.0},
                        "reference deck": {1: 525.0, 2: 535.0}})
    assert race.left_after(2) == list(names)  # the deck leads, so it stays; nobody is decided below it
    assert race.next_round() == ["candidate 1", "reference deck"]  # means 510 > 495: candidate 2 sits out
    race.rounds[3] = ["candidate 1", "reference deck"]
    assert race.next_round() is None  # all 8 trials spent


def test_the_race_leader_agrees_with_the_paired_ratio_when_one_round_is_an_outlier():
    """Regression (live check of 2026-11-23, seed 2): a reference won the race on its arithmetic mean, lifted
    by one outlying round (458k, interval 251k–837k), against a candidate faster in the other rounds. The
    leader is now the highest geometric mean, whose ratio over shared rounds is the paired ratio's estimate."""
    from pipebench.search.confirm import Contender, Race, decide

    names = ("candidate 1", "TF defaults")
    contenders = {name: Contender(name, {"batch_size": 512}, f"config-{i}") for i, name in enumerate(names)}
    race = Race(contenders, rounds={1: list(names), 2: list(names), 3: list(names)}, budget=6,
                values={"candidate 1": {1: 160.0, 2: 160.0, 3: 160.0}, "TF defaults": {1: 100.0, 2: 100.0, 3: 300.0}})
    assert race.ratio("candidate 1", "TF defaults").mean > 1.0  # the paired estimate favours the candidate
    assert decide(race).winner.name == "candidate 1"  # arithmetic means (160 < 166.7) named TF defaults
