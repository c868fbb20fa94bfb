"""The command line as a user meets it: light --help, one-line errors, tracebacks only on request."""
from __future__ import annotations

import argparse
import os

import pytest

from pipebench.cli import build_parser
from pipebench.testing import run_pipebench


def test_help_is_argparses_usage(cli):
    """tests/test_imports.py checks what --help imports."""
    for argv in (["--help"], ["convert", "--help"], ["data", "synth", "--help"]):
        code, out, _ = cli(*argv)
        assert code == 0 and out.startswith("usage: pipebench"), argv


@pytest.mark.slow
def test_bad_data_exits_non_zero_with_one_line_and_no_traceback(tmp_path):
    src = tmp_path / "in.libsvm"
    src.write_text("1 1:1 2:1\n1 1:x 2:1\n")
    result = run_pipebench("convert", src, "--out", tmp_path / "o", "--field-size", "2", timeout_sec=120)
    assert result.returncode == 1
    assert result.stderr == f"pipebench: error: {src}:2: pair 1 '1:x': value 'x' is not a number\n"
    debug = run_pipebench("convert", src, "--out", tmp_path / "o", "--field-size", "2", timeout_sec=120,
                          env={**os.environ, "PIPEBENCH_DEBUG": "1"})
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "DataError" in debug.stderr
    assert not (tmp_path / "o").exists()


def test_pipebench_debug_is_read_as_a_boolean(monkeypatch):
    """Regression (issue 28): any value, `0` included, turned tracebacks on."""
    from pipebench.errors import debug

    for value, on in [("1", True), ("yes", True), ("true", True), ("on", True), ("0", False), ("false", False),
                      ("FALSE", False), ("no", False), ("off", False), ("", False), (" 0 ", False)]:
        monkeypatch.setenv("PIPEBENCH_DEBUG", value)
        assert debug() is on, value
    monkeypatch.delenv("PIPEBENCH_DEBUG")
    assert debug() is False


def test_missing_input_is_a_usage_error(tmp_path, cli):
    result = cli("convert", tmp_path / "nope.libsvm", "--out", tmp_path / "o")
    assert result.returncode == 2
    assert result.stderr == f"pipebench: error: {tmp_path / 'nope.libsvm'}: no such file\n"


def test_instance_type_reaches_the_run_as_an_assertion_and_never_the_environment(tmp_path, monkeypatch, cli):
    """`run --instance-type` set SM_CURRENT_INSTANCE_TYPE: the run recorded a SageMaker job and the
    variable leaked into every worker."""
    import pipebench.runner
    from pipebench.search.loop import LoopResult

    seen = {}

    def fake_run(experiment, run_dir, instance_type, log, profile=None):
        seen.update(instance_type=instance_type, env=os.environ.get("SM_CURRENT_INSTANCE_TYPE"))
        return pipebench.runner.RunOutcome(tmp_path, LoopResult([]))

    monkeypatch.delenv("SM_CURRENT_INSTANCE_TYPE", raising=False)
    monkeypatch.setattr(pipebench.runner, "run", fake_run)
    experiment = tmp_path / "x.yaml"
    experiment.write_text("name: x\n")
    code, _, err = cli("run", experiment, "--instance-type", "ml.c5.xlarge")
    assert code == 0, err
    assert seen == {"instance_type": "ml.c5.xlarge", "env": None}


def test_resume_refuses_flags_it_cannot_apply(tmp_path, cli):
    """`run --resume` silently ignored --set, --quick and --instance-type."""
    for flags in (["--set", "grid.batch_size=[8]"], ["--quick"], ["--instance-type", "ml.c5.xlarge"],
                  ["--trainer", "cpu"], ["--baseline", "aws-sample"]):
        code, _, err = cli("run", "--resume", tmp_path, *flags)
        assert code == 2 and f"run --resume: {flags[0]} cannot change a run that has started" in err, err


def test_trainer_and_baseline_are_settings_of_the_resolved_experiment(tmp_path, monkeypatch, cli):
    """What the verdict assumed and what the action measures against must be in config.yaml, where resume and
    report read them; a baseline naming nothing the experiment measures is refused before any work."""
    import pipebench.runner
    from pipebench.search.loop import LoopResult

    seen = {}

    def fake_run(experiment, run_dir, instance_type, log, profile=None):
        seen.update(trainer=experiment["measurement"]["trainer"], baseline=experiment["pipelines"]["baseline"])
        return pipebench.runner.RunOutcome(tmp_path, LoopResult([]))

    monkeypatch.setattr(pipebench.runner, "run", fake_run)
    experiment = tmp_path / "x.yaml"
    experiment.write_text("name: x\n")
    assert cli("run", experiment)[0] == 0 and seen == {"trainer": "auto", "baseline": None}
    code, _, err = cli("run", experiment, "--trainer", "accelerator", "--baseline", "0123456789ab")
    assert code == 0, err
    assert seen == {"trainer": "accelerator", "baseline": "0123456789ab"}  # a configuration id of digits stays text
    code, _, err = cli("run", experiment, "--baseline", "aws-sampel")
    assert code == 1 and err == ("pipebench: error: --baseline pipelines.baseline: 'aws-sampel' names no pipeline of "
                                 "this experiment (lambdaji-libsvm, aws-sample) and is not a configuration id (12 hex "
                                 "digits: trials.parquet's configuration_id)\n"), err


def test_quick_without_a_quick_list_is_refused(tmp_path, cli):
    """`run --quick` on an experiment without `quick:` silently ran the full grid."""
    experiment = tmp_path / "x.yaml"
    experiment.write_text("name: x\n")
    code, _, err = cli("run", experiment, "--quick")
    assert code == 1 and "--quick: the experiment has no `quick:` list" in err, err


def _helps(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    """Give the --help text of `parser` and of every subcommand below it, by subcommand path."""
    found = {path: parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_helps(sub, (*path, name)))
    return found


def test_usage_errors_are_one_line_naming_the_subcommand_and_help_is_argparses(monkeypatch, cli):
    """Regression: argparse printed usage lines before its error (10 lines for `convert`); the corpus
    (tests/test_bad_runs.py) checks more subcommands."""
    result = cli("convert")
    assert result.returncode == 2
    assert result.stderr == ("pipebench: error: convert: the following arguments are required: INPUT, --out "
                             "(see pipebench convert --help)\n")
    ours = _helps(build_parser())
    monkeypatch.setattr("pipebench.cli._Parser", argparse.ArgumentParser)
    assert ours == _helps(build_parser()) and len(ours) > 10


def test_diagnose_help_says_the_limits_the_diagnosis_applies():
    """The CLI repeats diagnose's default limits to build its help without importing the diagnose package."""
    from pipebench.cli import diagnose as cli
    from pipebench.diagnose import run

    assert (cli.DIAGNOSE_TIMEOUT_SEC, cli.DIAGNOSE_MEMORY_CAP_MB) == (run.TIMEOUT_SEC, run.MEMORY_CAP_MB)
    text = build_parser()._subparsers._group_actions[0].choices["diagnose"].format_help()
    assert "--timeout SEC" in text and "(default 1800)" in text and "--memory-cap MB" in text and "8192" in text


def _numeric_options(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _numeric_options(sub, (*path, name))
        elif action.type in (int, float) or hasattr(action.type, "bounds"):
            yield path, action


def test_every_numeric_option_has_a_range_said_in_help_and_refused_outside_it(cli):
    """`--rounds 100000000000000000000` once ran without end. Every numeric option of every command has a range,
    said in its --help, and a value outside it (too big, NaN, infinite) is refused in one line, exit 2."""
    found = list(_numeric_options(build_parser()))
    assert len(found) >= 20, found
    for path, action in found:
        where = f"{' '.join(path)} {action.option_strings}"
        assert hasattr(action.type, "bounds"), f"{where}: a bare {action.type.__name__} has no range"
        assert f"(range: {action.type.bounds})" in action.help, where
        for outside in ("100000000000000000000000", "-100000000000000000000000", "nan", "inf"):
            with pytest.raises(argparse.ArgumentTypeError, match="^(must be|not an integer)"):
                action.type(outside)
    code, _, err = cli("diagnose", "x.py:f", "--rounds", "100000000000000000000")
    assert code == 2 and err.count("\n") == 1 and "must be from 2 to 100" in err, err
