"""Interleaved rounds of several arms in one warm worker: each round times one window of every arm, in a random
order (RMIT, pipebench.measure.round_order), so drift on the machine hits every arm alike; or, to compare arms
with one base arm, each arm's window right beside one of the base's, one pair per arm per round (`paired_rounds`).

The arms share one process, so none may run on what another left behind (pipebench.measure.windows says why).
`pipebench diagnose`'s arms keep their iterators from window to window: a fresh iterator per window would time
tf.data's start (AUTOTUNE raising parallelism from its initial guess, every buffer filling again), and a pipeline
parsing per example read half of what a plain loop over it reads. Between windows an arm's pipeline refills its
buffers and then blocks, so before each window the worker waits until the process is idle (every other pipeline
blocked), then lets the arm settle untimed — from a fresh iterator long enough to fill its shuffle buffers (a kept
one that calibration or an earlier round read has filled them: Arm.warm), every time until it has drained what its buffers banked meanwhile (`settle`) — before the timed window. A window's CPU
seconds are then the arm's own. A kept iterator starts afresh every RESTART_WINDOWS windows, since each window
doubles what its autotuned prefetch buffers may bank (pipebench.measure.windows.Arm.restart). An arm that is
released (a trial's) starts afresh every window. No TensorFlow import here: the arms are handed in.

Two settle policies sit side by side here and in pipebench.measure.windows, for two kinds of comparison. A trial
(`windows.measure`) compares a train arm with the ceiling of its own step: the pipeline must not run behind the
ceiling's window (its threads would take the step's cores: lambdaji-libsvm's prefetch(500000) cut the ceiling by a
third), so its iterator is released and one untimed settle window covers its fresh start, cheap beside a train step.
These rounds compare input pipelines with each other at their own speed, where a fresh start is what would be timed
(AUTOTUNE's first guess, every buffer filling: a per-example parser read half a plain loop's rate so): the arms keep
their iterators, wait until the process is idle, and `settle` until drained. A released arm here (a trial's, or a
prefix sunk through a shard) follows the trial's policy.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pipebench.measure.intervals import Interval, pooled_ratio_interval
from pipebench.measure.round_order import round_order
from pipebench.measure.trial import Window
from pipebench.measure.windows import REAP_SETTLE_SEC, Arm, wait_until_idle, wind_down


#: Settling goes on while an arm's rate falls by more than this from one call to the next (it is still draining what
#: its buffers banked while other arms ran), at most SETTLE_MAX_SEC past the minimum.
DRAIN_RATIO, SETTLE_MAX_SEC = 1.25, 2.0
#: A kept iterator's windows before it starts afresh: its prefetch buffers bank at most 2**4 elements each.
RESTART_WINDOWS = 4
#: Nor has an arm drained while a call reads more than this times the median of its earlier windows: banked rows
#: read from memory come at a steady rate too (a user's prefetch(256) of 256-row batches banks 65,536 rows).
BANK_RATIO = 2.0


def settle(arm: Arm, seconds: float, examples: int, steady: float | None = None) -> None:
    """Run `arm` untimed for at least `seconds` and at least `examples` examples (its buffers filled), and until it
    no longer drains: a kept iterator banks rows in its buffers while other arms are timed, and a window that
    started on them would read them at many times the pipeline's rate (a 16× "gain" seen so). Draining: its rate
    still falls from one call to the next, or it is over BANK_RATIO times `steady` (the median rate of its earlier
    windows: real_longmao_csv_criteo's whole pipeline, ~16k rows/s, read 131k in one window, its prefetch(256)
    banked). An arm of whole passes (Arm.whole_passes) has nothing to settle: each window starts a pass afresh.

    Earlier windows' spent iterators wind down (pipebench.measure.windows.wind_down) first, so what the arm banks
    meanwhile is drained below; those its own settle hands over wind down beside its window, which waits for none
    (Arm.timed). Without the first wait tf1_tensors' self-check was inconclusive in both whole-corpus runs that had
    none (2026-12-03/04; with it 1.23× (1.04–1.46×) agrees); with a wait after draining, real_init2winit_criteo_tsv's
    was inconclusive (its pipeline banked while the window waited; without: 1.02× (0.70–1.48×))."""
    wind_down(REAP_SETTLE_SEC)
    if arm.whole_passes:
        return
    seen, start, last = 0, arm.clock(), None
    while True:
        began = arm.clock()
        seen += (got := arm.call()[0])
        now = arm.clock()
        rate = got / max(now - began, 1e-9)
        drained = last is not None and rate * DRAIN_RATIO >= last and (steady is None or rate <= BANK_RATIO * steady)
        if now - start >= seconds and seen >= examples and (drained or now - start >= seconds + SETTLE_MAX_SEC):
            return
        last = rate


def calibrate(arms: Sequence[Arm]) -> None:
    """Calibrate each arm's steps per call alone (pipebench.measure.windows.Arm.calibrate), releasing it after."""
    for arm in arms:
        arm.release()
    for arm in arms:
        wait_until_idle()
        arm.calibrate()
        arm.release()


def interleaved_rounds(arms: Sequence[Arm], rounds: int, window_sec: float, settle_sec: float,
                       settle_examples: Mapping[str, int], seed: str,
                       log: Callable[[str], None] = lambda text: None) -> dict[str, list[Window]]:
    """Give each arm's windows, one per round (module docstring); arms must be calibrated (`calibrate`)."""
    found: dict[str, list[Window]] = {arm.name: [] for arm in arms}
    fresh = {arm.name for arm in arms if not arm.warm}  # whose next window starts from a fresh iterator
    for round_index in range(rounds):
        for arm in round_order(arms, round_index, seed):
            wait_until_idle()
            settle(arm, settle_sec, settle_examples.get(arm.name, 0) if arm.name in fresh else 0,
                   _median_rate(found[arm.name]))
            window = arm.timed(window_sec, round_index)
            _after_window(arm, fresh)
            found[arm.name].append(window)
        log(f"round {round_index + 1}/{rounds}: " + ", ".join(
            f"{name} {windows[-1].examples / windows[-1].seconds:,.0f}" for name, windows in found.items())
            + " rows/s")
    return found


def paired_rounds(base: Arm, others: Sequence[Arm], rounds: int, window_sec: float, settle_sec: float,
                  settle_examples: Mapping[str, int], seed: str,
                  log: Callable[[str], None] = lambda text: None,
                  first_round: int = 0) -> dict[str, list[tuple[Window, Window]]]:
    """Give, for each of `others`, its (base window, own window) pairs, one per round (numbered from `first_round`:
    a comparison continued keeps its visiting order); arms must be calibrated.

    Each round visits the others in a random order (pipebench.measure.round_order), two at a time, with one window
    of `base` between them (A B A': the base window pairs with the window right before it and the one right after;
    the order decides which arm is which); an odd one out is timed beside a base window of its own, base first in
    one round and second in the next (ABBA). So a pair shares the machine's state of that second (on a shared
    machine, drift between windows seconds apart swamps a rewrite's gain), and a round of k others times ⌈k/2⌉
    base windows, not k: with four rewrites 6 windows in place of 8, and the second worker's whole passes of
    real_tfrs_ranking_cache (4 s each of the base) one in place of two beside its rewrite and plain loop. Two pairs
    that share a base window share its noise; each arm's gain is read from its own pairs alone.
    """
    found: dict[str, list[tuple[Window, Window]]] = {arm.name: [] for arm in others}
    fresh = {arm.name for arm in [base, *others] if not arm.warm}  # whose next window starts from a fresh iterator
    windows: dict[str, list[Window]] = {arm.name: [] for arm in [base, *others]}
    for round_index in range(first_round, first_round + rounds):
        order = round_order(others, round_index, seed)
        for group_index, start in enumerate(range(0, len(order), 2)):
            group = order[start:start + 2]
            if len(group) == 2:
                visits = [group[0], base, group[1]]
            else:
                visits = [base, group[0]] if (round_index + group_index) % 2 == 0 else [group[0], base]
            timed = {}
            for arm in visits:
                wait_until_idle()
                settle(arm, settle_sec, settle_examples.get(arm.name, 0) if arm.name in fresh else 0,
                       _median_rate(windows[arm.name]))
                timed[arm.name] = arm.timed(window_sec, round_index)
                windows[arm.name].append(timed[arm.name])
                _after_window(arm, fresh)
            for other in group:
                found[other.name].append((timed[base.name], timed[other.name]))
        log(f"round {round_index + 1}/{first_round + rounds}: " + ", ".join(
            f"{name} {pairs[-1][1].examples / pairs[-1][1].seconds / (pairs[-1][0].examples / pairs[-1][0].seconds):.2f}×"
            for name, pairs in found.items()) + f" of {base.name}")
    return found


def base_windows(pairs: Mapping[str, Sequence[tuple[Window, Window]]]) -> list[Window]:
    """Give the base's windows of `paired_rounds`' pairs, each once (two arms' pairs may share one)."""
    return list({id(b): b for found in pairs.values() for b, _ in found}.values())


def _median_rate(windows: Sequence[Window]) -> float | None:
    """Give the median rows/s of `windows`, None without one."""
    rates = sorted(w.examples / w.seconds for w in windows if w.seconds > 0)
    return rates[len(rates) // 2] if rates else None


def _after_window(arm: Arm, fresh: set[str]) -> None:
    """Release `arm` (a trial's), or restart its kept iterator every RESTART_WINDOWS windows (unless it does not
    restart: Arm.restarts); note in `fresh` whether its next window starts afresh (its settle then fills its buffers
    first)."""
    if arm.release() or (arm.restarts and arm.windows_since_start >= RESTART_WINDOWS):
        arm.restart()
        fresh.add(arm.name)
    else:
        fresh.discard(arm.name)


def still_open(pairs: Sequence[tuple[Window, Window]], confidence: float, smallest: float = 1.0) -> bool:
    """Tell whether a comparison's first rounds leave it worth more rounds: its ratio interval at `confidence`
    straddles 1 and its mean is above `smallest` (the smallest gain that would be offered). One that has shown no
    such gain would rarely end with its 95% interval above 1 and its mean above `smallest` in a few more rounds, and
    an undecided rewrite is not kept either way."""
    found = gain(pairs, confidence)
    decided = found.decided and (found.low > 1.0 or found.high < 1.0)
    return not decided and found.mean > smallest


def gain(pairs: Sequence[tuple[Window, Window]], confidence: float | None = None) -> Interval:
    """Give an arm's gain over its base from their (base, arm) window pairs: the pooled ratio of their rates with
    its interval (pipebench.measure.intervals.pooled_ratio_interval: a stalled window weighs what it lasted)."""
    windows = ([(b.examples, b.seconds) for _, b in pairs], [(a.examples, a.seconds) for a, _ in pairs])
    return pooled_ratio_interval(*windows) if confidence is None else pooled_ratio_interval(*windows, confidence)
