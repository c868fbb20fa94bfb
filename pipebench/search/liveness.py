"""Whether a study's running trials still have a live worker, and the heartbeat that says so.

A slot whose worker died (kill -9, a lost host) is failed and enqueued again with the same settings
— by the next process on that host, or by any worker once the trial's heartbeat stops — so no slot
is lost and none is measured twice (Optuna's `fail_stale_trials` + RetryHeartbeatStaleTrialCallback).
"""
from __future__ import annotations

import socket
import threading
import time

import psutil

from pipebench.search.slots import HEARTBEAT, RETRY_OF, WORKER

#: A running trial whose heartbeat is older than this many heartbeat intervals is taken as lost.
MISSED_HEARTBEATS = 4


def worker_id() -> str:
    """Give this process's identity as trials record it: host, pid and start time (pids are reused)."""
    me = psutil.Process()
    return f"{socket.gethostname()}:{me.pid}:{me.create_time():.3f}"


def _died_here(pid: str, created: str) -> bool:
    """Whether this host's process `pid`, started at `created`, is gone (a new process may reuse the pid)."""
    try:
        return f"{psutil.Process(int(pid)).create_time():.3f}" != created
    except psutil.NoSuchProcess:
        return True


def lost(trial, heartbeat_sec: float) -> str | None:
    """Give why a running trial's worker is gone (died on this host, or silent on another), or None."""
    worker = trial.user_attrs.get(WORKER)
    if worker is not None:
        host, pid, created = worker.rsplit(":", 2)
        if host == socket.gethostname():  # only this host can tell whether its process is alive
            return f"its worker {worker} died" if _died_here(pid, created) else None
    # a worker killed between asking for the trial and naming itself left no name: its start is its last sign
    last = trial.user_attrs.get(HEARTBEAT) or trial.datetime_start.timestamp()
    silent = time.time() - last
    if silent > MISSED_HEARTBEATS * heartbeat_sec:
        return f"no heartbeat from its worker {worker or '(never named: it died as it started)'} for {silent:.0f} s"
    return None


def reclaim_dead_slots(study, log=print, heartbeat_sec: float = 30.0) -> int:
    """Fail the running trials whose worker is gone and enqueue their settings again; give how many."""
    from optuna.trial import TrialState

    reclaimed = 0
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        why = lost(trial, heartbeat_sec)
        if why is None:
            continue
        try:
            study.tell(trial.number, state=TrialState.FAIL)
        except (RuntimeError, ValueError):
            continue  # another process reclaimed it first
        study.enqueue_trial(trial.params, user_attrs={**trial.user_attrs, RETRY_OF: trial.number, WORKER: None,
                                                      HEARTBEAT: None})
        log(f"trial {trial.number}: {why}; its settings are enqueued again")
        reclaimed += 1
    return reclaimed


class Heartbeat:
    """Stamps the running trial every `interval` seconds, so workers on other hosts can tell it is alive."""

    def __init__(self, trial, interval: float) -> None:
        self._trial, self._interval, self._stop = trial, interval, threading.Event()
        self._thread = threading.Thread(target=self._beat, name="pipebench-heartbeat", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            self._trial.set_user_attr(HEARTBEAT, time.time())

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
