"""Sampler: CPU and RSS of a whole process tree, GPU through a fake NVML, page-cache residency."""
from __future__ import annotations

import itertools
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fake_nvml import FakeGPU, FakeNVML

from pipebench.measure.sampler import Sample, Sampler, summarize
from pipebench.page_cache import evict_page_cache, resident_fraction, resident_pages

MiB = 2**20

# root and middle sleep; the leaf, a grandchild of the root, holds 200 MiB and burns one CPU.
TREE_SCRIPT = """
import subprocess, sys, time
level = sys.argv[1]
if level == "leaf":
    block = b"x" * (200 << 20)
    print("ready", flush=True)
    while True:
        pass
subprocess.Popen([sys.executable, __file__, {"root": "middle", "middle": "leaf"}[level]])
time.sleep(120)
"""


def sleeper() -> subprocess.Popen:
    """Give a child that sleeps, once it has started (a child still starting Python burns CPU a sample would see)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(120)"],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    child.stdout.close()  # it writes nothing more
    return child


def fake_clock(start: float = 100.0, step: float = 0.5):
    """Give a clock that advances `step` seconds per reading."""
    ticks = itertools.count()
    return lambda: start + step * next(ticks)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Sample the three-process tree for about a second; give (samples, summary, sampler)."""
    script = tmp_path_factory.mktemp("tree") / "tree.py"
    script.write_text(TREE_SCRIPT)
    root = subprocess.Popen([sys.executable, str(script), "root"], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        ready, _, _ = select.select([root.stdout], [], [], 60)
        assert ready and root.stdout.readline().strip() == "ready", "the leaf never started"
        sampler = Sampler(root.pid, interval_sec=0.1).start()
        threading.Event().wait(1.2)
        samples = sampler.stop()
    finally:
        os.killpg(root.pid, signal.SIGKILL)  # the tree shares the root's new process group
        root.wait()
        root.stdout.close()
    return samples, summarize(samples), sampler


@pytest.mark.slow
def test_cpu_of_a_burning_grandchild_is_counted(tree):
    samples, summary, _ = tree
    assert len(samples) >= 5
    assert all(s.processes == 3 for s in samples)
    assert summary.cpu_pct_median > 20  # the root and the middle sleep: this is the grandchild (beside any load)


@pytest.mark.slow  # the `tree` fixture starts processes
def test_rss_of_the_tree_includes_the_grandchilds_200_mib(tree):
    samples, summary, _ = tree
    assert max(s.rss_bytes for s in samples) > 200 * MiB
    assert summary.rss_median_bytes > 200 * MiB
    assert max(s.root_rss_peak_bytes for s in samples) < 100 * MiB  # the root's own peak: it only sleeps


@pytest.mark.slow  # the `tree` fixture starts processes
def test_cpu_shares_use_the_roots_cpus_and_their_physical_cores(tree):
    samples, _, sampler = tree
    assert sampler.vcpus == len(os.sched_getaffinity(0))
    for s in samples:
        assert s.cpu_pct_of_vcpus == pytest.approx(s.cpu_pct / sampler.vcpus)
        assert s.cpu_pct_of_physical_cores == pytest.approx(s.cpu_pct / sampler.physical_cores)
        assert len(s.per_core_pct) == os.cpu_count()
        assert all(0 <= pct <= 100 for pct in s.per_core_pct)
    assert samples == sorted(samples, key=lambda s: s.t_sec)


@pytest.mark.slow  # the `tree` fixture starts processes
def test_samples_become_parquet_rows(tree):
    samples, _, _ = tree
    rows = [s.as_row() for s in samples]
    assert all(isinstance(v, (int, float, list, type(None))) for row in rows for v in row.values())
    pyarrow = pytest.importorskip("pyarrow")
    table = pyarrow.Table.from_pylist(rows)
    assert table.num_rows == len(samples)
    assert str(table.schema.field("per_core_pct").type) == "list<item: double>"


@pytest.mark.slow
def test_samples_take_their_time_from_the_injected_clock():
    child = sleeper()
    try:
        sampler = Sampler(child.pid, interval_sec=3600, clock=fake_clock()).start()  # the thread never fires
        first, second = sampler.sample_now(), sampler.sample_now()
        samples = sampler.stop()
    finally:
        child.kill()
        child.wait()
    assert [s.t_sec for s in samples] == [first.t_sec, second.t_sec] == [100.5, 101.0]
    assert all(s.cpu_pct < 5 and s.processes == 1 for s in samples)  # a sleeping process over half a "second"


@pytest.mark.slow
def test_sampling_ends_with_the_root():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    sampler = Sampler(child.pid, interval_sec=3600).start()
    child.wait()
    assert sampler.sample_now() is None
    assert sampler.stop() == []
    assert Sampler(child.pid).start().stop() == []  # started after the process was gone


@pytest.mark.slow
def test_on_sample_sees_every_sample_and_its_errors_reach_stop():
    child = sleeper()
    seen, enough = [], threading.Event()

    def collect(sample: Sample) -> None:
        seen.append(sample)
        if len(seen) >= 3:
            enough.set()

    def over_cap(sample: Sample) -> None:
        raise RuntimeError(f"rss {sample.rss_bytes} over the cap")

    try:
        sampler = Sampler(child.pid, interval_sec=0.05, on_sample=collect).start()
        assert enough.wait(30)
        assert sampler.stop() == seen
        failing = Sampler(child.pid, interval_sec=0.05, on_sample=over_cap).start()
        failing._thread.join(30)  # the error ends the thread
        with pytest.raises(RuntimeError, match="over the cap"):
            failing.stop()
    finally:
        child.kill()
        child.wait()


@pytest.mark.slow
def test_gpu_fields_come_from_nvml():
    nvml = FakeNVML([FakeGPU(util_pct=40, mem_used_bytes=1 * 2**30), FakeGPU(util_pct=80, mem_used_bytes=3 * 2**30)])
    child = sleeper()
    try:
        sampler = Sampler(child.pid, interval_sec=3600, nvml=nvml, clock=fake_clock()).start()
        first = sampler.sample_now()
        nvml.gpus[0].util_pct, nvml.gpus[0].mem_used_bytes = 100, 9 * 2**30
        second = sampler.sample_now()
        samples = sampler.stop()
        only_second = Sampler(child.pid, interval_sec=3600, nvml=nvml, gpu_indices=[1]).start()
        picked = only_second.sample_now()
        only_second.stop()
    finally:
        child.kill()
        child.wait()
    assert (first.gpu_util_pct, first.gpu_mem_used_bytes) == (60.0, 4 * 2**30)
    assert first.gpu_util_pct_per_device == (40.0, 80.0)
    assert (second.gpu_util_pct, second.gpu_mem_used_bytes) == (90.0, 12 * 2**30)
    assert (picked.gpu_util_pct, picked.gpu_mem_used_bytes) == (80.0, 3 * 2**30)
    assert nvml.calls == ["init", "shutdown", "init", "shutdown"]
    summary = summarize(samples)
    assert summary.gpu_util_pct_median == 75.0 and summary.gpu_mem_peak_bytes == 12 * 2**30
    assert samples[0].as_row()["gpu_util_pct_per_device"] == [40.0, 80.0]


@pytest.mark.slow
def test_without_nvml_gpu_fields_are_empty_and_the_reason_is_kept():
    child = sleeper()
    try:
        sampler = Sampler(child.pid, interval_sec=3600, nvml=FakeNVML([], fail_init="Driver Not Loaded")).start()
        sample = sampler.sample_now()
        sampler.stop()
    finally:
        child.kill()
        child.wait()
    assert sample.gpu_util_pct is None and sample.gpu_mem_used_bytes is None
    assert sampler.gpu_reason == "NVML unavailable: Driver Not Loaded"


def made_sample(t_sec: float, cpu_pct: float, rss_bytes: int, **extra) -> Sample:
    return Sample(t_sec=t_sec, wall_time=0.0, processes=1, threads=1, cpu_pct=cpu_pct, cpu_pct_of_vcpus=cpu_pct / 2,
                  cpu_pct_of_physical_cores=cpu_pct / 2, per_core_pct=(cpu_pct / 2, 10.0), rss_bytes=rss_bytes,
                  root_rss_peak_bytes=rss_bytes + 1, **extra)


def test_summary_of_known_samples():
    clock = fake_clock(start=0.0, step=1.0)
    samples = [made_sample(clock(), cpu, rss, page_cache_resident_fraction=fraction)
               for cpu, rss, fraction in [(10, 100, 0.0), (20, 300, 0.5), (30, 200, 0.9), (40, 400, 1.0),
                                          (200, 50, 1.0)]]
    summary = summarize(samples)
    assert summary.samples == 5
    assert summary.cpu_pct_median == 30.0
    assert summary.cpu_pct_p95 == pytest.approx(168.0)  # linear interpolation between 40 and 200
    assert summary.cpu_pct_of_vcpus_median == summary.cpu_pct_of_physical_cores_median == 15.0
    assert summary.busiest_core_pct_median == 15.0
    # the host's busy CPU (the per-core sum) beyond the tree's: 5 in the first sample, none after
    assert summary.other_cpu_pct_median == 0.0
    assert summary.rss_median_bytes == 200
    assert (summary.page_cache_resident_fraction_start, summary.page_cache_resident_fraction_end) == (0.0, 1.0)
    assert summary.gpu_util_pct_median is None and summary.gpu_mem_peak_bytes is None
    assert Sampler(0).summarize(samples) == summary
    window = summarize(samples, since=1.0, until=3.0)  # e.g. a worker's measured windows, warmup left out
    assert window.samples == 3 and window.cpu_pct_median == 30.0 and window.rss_median_bytes == 300
    empty = summarize([])
    assert empty.samples == 0 and empty.cpu_pct_median is None and empty.rss_median_bytes is None


def test_other_processes_cpu_is_what_the_host_used_beyond_the_trial():
    """Interference is data: a neighbour keeping one core busy shows as ~100 (one vCPU) beside the trial."""
    samples = [Sample(t_sec=float(t), wall_time=0.0, processes=1, threads=1, cpu_pct=100.0, cpu_pct_of_vcpus=50.0,
                      cpu_pct_of_physical_cores=50.0, per_core_pct=(100.0, 95.0 + t), rss_bytes=1,
                      root_rss_peak_bytes=1) for t in range(5)]
    assert summarize(samples).other_cpu_pct_median == 97.0


def filesystem_of(path: Path) -> str:
    mounts = [line.split()[1:3] for line in Path("/proc/self/mounts").read_text().splitlines()]
    point, kind = max(((p, k) for p, k in mounts if str(path.resolve()).startswith(p.rstrip("/") + "/")),
                      key=lambda m: len(m[0]))
    return f"{kind} (mounted at {point})"


def test_evicted_pages_leave_the_page_cache_and_reading_brings_them_back(tmp_path):
    data = tmp_path / "part-00000.tfrecord"
    data.write_bytes(os.urandom(16 * MiB))
    data.read_bytes()
    assert resident_fraction(data) > 0.99
    left = evict_page_cache([data])
    assert left == pytest.approx(resident_fraction(data), abs=0.05)
    if left > 0.5:
        pytest.skip(f"the kernel kept {left:.0%} of the pages resident after POSIX_FADV_DONTNEED on "
                    f"{filesystem_of(tmp_path)}: on tmpfs/ramfs the page cache is the file's only copy, and "
                    "pages another process maps are not dropped, so eviction cannot be shown here")
    assert left < 0.1
    with open(data, "rb") as f:
        f.read(MiB)
    assert 0.05 < resident_fraction(data) < 0.9  # the first MiB, and what readahead added
    data.read_bytes()
    assert resident_fraction(data) > 0.99


@pytest.mark.slow
def test_sampler_reports_residency_of_the_data_files(tmp_path):
    files = [tmp_path / "a", tmp_path / "b", tmp_path / "empty"]
    files[0].write_bytes(os.urandom(MiB))
    files[1].write_bytes(os.urandom(3 * MiB))
    files[2].write_bytes(b"")
    child = sleeper()
    try:
        sampler = Sampler(child.pid, interval_sec=3600, data_files=files).start()
        warm = sampler.sample_now()
        left = evict_page_cache(files[1:])
        cold = sampler.sample_now()
        sampler.stop()
    finally:
        child.kill()
        child.wait()
    assert warm.page_cache_resident_fraction > 0.99
    if left > 0.5:
        pytest.skip(f"eviction did not take on {filesystem_of(tmp_path)} (see the test above)")
    assert cold.page_cache_resident_fraction == pytest.approx(0.25, abs=0.05)  # 1 of 4 MiB still cached
    assert resident_pages(files[2]) == (0, 0) and resident_fraction(files[2]) == 1.0


@pytest.mark.slow
def test_others_busy_pct_sees_another_process_using_a_core_and_not_this_one():
    """A spinning process is others' CPU; this process's own spinning thread, in the same window as the host's busy
    CPU, is not (compared within one window: other tests running beside this one load the host as they like)."""
    import psutil

    from pipebench.measure.sampler import OthersCpu, others_busy_pct

    hog = subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"])
    try:
        assert others_busy_pct(0.5) > 25.0, "a process spinning on a core is other processes' CPU"
    finally:
        hog.kill()
        hog.wait()
    spin = threading.Event()

    def work():
        while not spin.is_set():
            pass
    thread = threading.Thread(target=work)
    thread.start()
    try:
        psutil.cpu_percent(percpu=True)
        meter = OthersCpu()
        spin.wait(0.5)
        others, host = meter.pct(), sum(psutil.cpu_percent(percpu=True))
    finally:
        spin.set()
        thread.join()
    assert others < host - 40.0, "this process's own spinning thread (at least 40% of a vCPU) is not others' CPU"
