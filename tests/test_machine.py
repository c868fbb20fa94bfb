"""Machine facts: sane on this host, TF asked in a child, OpenMP detection checked independently."""
from __future__ import annotations

import copy
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from fake_nvml import FakeGPU, FakeNVML

from pipebench.measure import machine
from pipebench.measure.facts import MachineFacts, PipeModeFacts, TensorFlowProbe
from pipebench.typed import to_json

STOCK_TF_STATEMENT = "no OpenMP runtime linked: KMP_* and OMP_NUM_THREADS cannot affect TF ops on this build"


# Imports TF the way a worker does, runs an op, and prints the files mapped into the process; then
# loads a library known to need libgomp, as a positive control that the check can see one.
MAPS_SCRIPT = """
import ctypes, glob, json, os, sys
import tensorflow as tf
tf.linalg.matmul(tf.ones([2, 2]), tf.ones([2, 2])).numpy()
def mapped():
    return sorted({line.split()[-1] for line in open(f"/proc/{os.getpid()}/maps") if "/" in line})
before = mapped()
try:
    import numba.np.ufunc
    ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(numba.np.ufunc.__file__), "omppool*.so"))[0])
    after = mapped()
except (ImportError, IndexError, OSError):
    after = None
print(json.dumps({"before": before, "after": after}))
"""


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != machine.ONEDNN_ENV}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    return env


@pytest.fixture(scope="module")
def collected() -> dict:
    """Give the facts `pipebench env --json` prints (tests/test_imports.py: it imports no TF)."""
    child = subprocess.run([sys.executable, "-m", "pipebench.cli", "env", "--json", "--instance-type",
                            "ml.c5.2xlarge"], env=child_env(), capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout)


@pytest.fixture
def facts(collected):
    return copy.deepcopy(collected)


@pytest.mark.tf214
def test_facts_describe_this_host(facts):
    cpu = facts["cpu"]
    assert cpu["vcpus"] == len(os.sched_getaffinity(0))
    assert 1 <= cpu["physical_cores"] <= cpu["online_cpus"] == os.cpu_count()
    assert cpu["physical_cores"] == psutil.cpu_count(logical=False)
    assert cpu["sockets"] >= 1 and cpu["model"]
    assert abs(facts["memory_bytes"] - psutil.virtual_memory().total) < 2**30
    assert facts["os"]["kernel"] == platform.release()
    assert facts["python"]["version"] == platform.python_version()
    assert facts["sagemaker"]["instance_type"] == "ml.c5.2xlarge"
    assert facts["sagemaker"]["instance_type_source"] == "asserted (--instance-type)"
    assert facts["sagemaker"]["in_training_job"] is False, "naming the instance type does not make this a SageMaker job"
    assert re.fullmatch(r"[0-9a-f]{16}", facts["host_fingerprint"])
    assert facts["host_fingerprint"] == machine.host_fingerprint(facts)


@pytest.mark.tf214
def test_tensorflow_facts_match_the_installed_tensorflow(facts):
    import tensorflow as tf

    described = facts["tensorflow"]
    assert described["importable"] and described["version"] == tf.__version__
    assert described["cuda_build"] == tf.test.is_built_with_cuda()
    assert described["onednn"]["env"] is None
    assert described["onednn"]["enabled"] == described["onednn"]["build_default"]
    assert isinstance(described["onednn"]["enabled"], bool)
    import importlib.util

    installed = importlib.util.find_spec("sagemaker_tensorflow") is not None  # only in the TF 2.14 environment
    assert described["sagemaker_tensorflow"]["importable"] is installed
    if not installed:
        assert "not installed" in described["sagemaker_tensorflow"]["reason"]


@pytest.mark.tf214
def test_stock_tensorflow_links_no_openmp_and_an_independent_check_agrees(facts):
    openmp = facts["tensorflow"]["openmp"]
    assert openmp["linked"] is False and openmp["runtimes"] == []
    assert openmp["statement"] == STOCK_TF_STATEMENT

    child = subprocess.run([sys.executable, "-c", MAPS_SCRIPT], env=child_env(), capture_output=True, text=True,
                           timeout=300)
    assert child.returncode == 0, child.stderr
    maps = json.loads(child.stdout)
    looks_like_openmp = re.compile(r"/lib(g|i)?omp[^/]*\.so[^/]*$")
    assert [path for path in maps["before"] if looks_like_openmp.search(path)] == []
    if maps["after"] is None:
        pytest.skip("positive control unavailable: numba's omppool (which needs libgomp) could not be loaded")
    loaded = [path for path in maps["after"] if looks_like_openmp.search(path)]
    assert loaded, "loading a libgomp user did not map libgomp: the maps check would be blind"
    assert machine.openmp_runtimes(maps["after"]) == sorted({Path(p).name for p in loaded})


def test_openmp_runtimes_are_recognised_by_file_name():
    libraries = ["/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0", "libiomp5.so", "/opt/llvm/lib/libomp.so.5",
                 "numpy.libs/libgomp-a34b3233.so.1", "libgomp.so.1", "libomptarget.so", "libXcomposite.so.1",
                 "_proto_comparators.so", "libgomp.a", "libgomp.spec", "libtensorflow_framework.so.2"]
    assert machine.openmp_runtimes(libraries) == ["libgomp-a34b3233.so.1", "libgomp.so.1", "libgomp.so.1.0.0",
                                                  "libiomp5.so", "libomp.so.5"]
    linked = machine.openmp_facts({"libtensorflow_framework.so.2": ["libiomp5.so"]}, [])
    assert linked["linked"] and linked["runtimes"] == ["libiomp5.so"]
    assert linked["statement"].startswith("OpenMP runtime linked (libiomp5.so): KMP_* and OMP_NUM_THREADS can affect")
    assert machine.openmp_facts({}, ["/usr/lib/libomp.so.5"])["linked"]
    assert machine.openmp_facts({}, [])["statement"] == STOCK_TF_STATEMENT
    assert machine.openmp_facts(None, None)["linked"] is None


@pytest.mark.slow
def test_elf_needed_reads_dynamic_sections(tmp_path):
    import numba.np.ufunc

    omppool = next(Path(numba.np.ufunc.__file__).parent.glob("omppool*.so"))
    assert machine.openmp_runtimes(machine.elf_needed(omppool)), "numba's OpenMP pool should need libgomp"
    (tmp_path / "text.so").write_text("not an ELF file")
    (tmp_path / "short.so").write_bytes(b"\x7fELF\x02\x01")
    assert machine.elf_needed(tmp_path / "text.so") == machine.elf_needed(tmp_path / "short.so") == []
    tf_dir = Path(importlib.util.find_spec("tensorflow").submodule_search_locations[0])
    if shutil.which("readelf"):
        for library in (omppool, next(tf_dir.glob("libtensorflow_framework.so*"))):
            shown = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
            assert machine.elf_needed(library) == re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", shown)


@pytest.mark.tf214
def test_the_child_sees_the_onednn_variable(facts):
    if {"avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile"} & set(facts["cpu"]["isa"]):
        # TF >= 2.9 Linux x86 wheels turn oneDNN on by default on CPUs with these features
        assert facts["tensorflow"]["onednn"]["build_default"] is True
    child = machine._run_tensorflow_child({**child_env(), machine.ONEDNN_ENV: "0"})
    assert child.onednn_enabled is False


def test_onednn_default_and_asked_state_come_from_separate_children(monkeypatch):
    seen = []

    def fake_child(env):
        seen.append(env.get(machine.ONEDNN_ENV))
        return TensorFlowProbe("2.99.0", "v2.99.0", None, "/tf", False, None, None, 0,
                               env.get(machine.ONEDNN_ENV) != "0", {}, (), PipeModeFacts(False, "x"))

    monkeypatch.setattr(machine, "_run_tensorflow_child", fake_child)
    summary = machine.tensorflow_summary({machine.ONEDNN_ENV: "0"})
    assert sorted(seen, key=str) == ["0", None]
    assert summary["onednn"] == machine.onednn_facts(True, False, "0")
    assert summary["version"] == "2.99.0" and "onednn_enabled" not in summary
    seen.clear()
    assert machine.tensorflow_summary({})["onednn"]["enabled"] is True
    assert seen == [None]


def test_the_tf_facts_child_output_is_read_strictly():
    probe = TensorFlowProbe("2.99.0", "v2.99.0", "3.0", "/tf", False, "12", None, 0, True, {"libx.so": ("libgomp.so.1",)},
                            ("/lib/libgomp.so.1",), PipeModeFacts(True, None))
    printed = "a warning TF printed first\n" + json.dumps(to_json(probe)) + "\n"
    assert machine.read_probe(printed) == probe
    assert machine.read_probe(json.dumps({**to_json(probe), "onednn": True})) == (
        "the TensorFlow facts child: onednn: unknown key (expected one of version, git_version, keras_version, "
        "library_dir, cuda_build, cuda_version, cudnn_version, gpus_visible, …)")
    assert machine.read_probe("{oops").startswith("the TensorFlow facts child:1: not valid JSON")


def test_onednn_statements():
    assert machine.onednn_facts(True, True, None)["statement"] == \
        "on (this build's default on this CPU; TF_ENABLE_ONEDNN_OPTS unset)"
    assert machine.onednn_facts(True, False, "0")["statement"] == \
        "off (TF_ENABLE_ONEDNN_OPTS=0; this build's default on this CPU is on)"
    assert machine.onednn_facts(True, True, "yes")["statement"] == \
        "on: TF ignores TF_ENABLE_ONEDNN_OPTS='yes' (not 0, 1, true or false) and keeps its default"
    assert machine.onednn_facts(False, False, "1")["statement"] == \
        "off: TF_ENABLE_ONEDNN_OPTS=1 has no effect on this build"
    assert machine.onednn_facts(None, None, "1")["enabled"] is None


def test_gpu_facts_through_nvml():
    nvml = FakeNVML([FakeGPU(), FakeGPU(name="NVIDIA A10G", mem_total_bytes=24 * 2**30)], driver=b"535.104.12")
    gpu = machine.gpu_facts(nvml)
    assert gpu == {"count": 2, "driver_version": "535.104.12", "reason": None, "devices": [
        {"index": 0, "name": "Tesla V100-SXM2-16GB", "memory_total_bytes": 16 * 2**30},
        {"index": 1, "name": "NVIDIA A10G", "memory_total_bytes": 24 * 2**30}]}
    assert nvml.calls == ["init", "shutdown"]
    failing = machine.gpu_facts(FakeNVML([], fail_init="Driver Not Loaded"))
    assert failing["count"] == 0 and failing["reason"] == "NVML unavailable: Driver Not Loaded"


@pytest.mark.tf214
def test_no_gpu_here_says_why(facts):
    if Path("/dev/nvidia0").exists():
        pytest.skip("this host has an NVIDIA GPU")
    assert facts["gpu"]["count"] == 0 and facts["gpu"]["reason"]


def test_sagemaker_instance_type_from_env_or_argument():
    env = {"SM_CURRENT_INSTANCE_TYPE": "ml.c5.9xlarge", "SM_HOSTS": '["algo-1", "algo-2"]', "SM_NUM_CPUS": "36",
           "SM_CURRENT_HOST": "algo-1"}
    from_env = machine.sagemaker_facts(None, env)
    assert from_env["instance_type"] == "ml.c5.9xlarge"
    assert from_env["instance_type_source"] == "SM_CURRENT_INSTANCE_TYPE"
    assert from_env["host_count"] == 2 and from_env["num_cpus"] == 36 and from_env["num_gpus"] is None
    assert from_env["in_training_job"]
    assert machine.sagemaker_facts("ml.c5.18xlarge", env)["instance_type"] == "ml.c5.9xlarge", "SageMaker's own wins"
    asserted = machine.sagemaker_facts("ml.c5.18xlarge", {})
    assert asserted["instance_type"] == "ml.c5.18xlarge" and not asserted["in_training_job"]
    assert asserted["instance_type_source"] == "asserted (--instance-type)"
    assert machine.sagemaker_facts(None, {})["instance_type"] is None


@pytest.mark.tf214
def test_fingerprint_ignores_noise_and_sees_what_decides_speed(facts):
    fingerprint = machine.host_fingerprint(facts)
    facts["memory_bytes"] += 3 * 2**20
    facts["collected_at"] = "2030-01-01T00:00:00+00:00"
    facts["os"]["kernel"] = "9.9.9"
    assert machine.host_fingerprint(facts) == fingerprint
    for change in (lambda f: f["tensorflow"].update(version="2.99.0"), lambda f: f["cpu"].update(vcpus=96),
                   lambda f: f["tensorflow"]["onednn"].update(enabled=not f["tensorflow"]["onednn"]["enabled"])):
        changed = copy.deepcopy(facts)
        change(changed)
        assert machine.host_fingerprint(changed) != fingerprint


@pytest.mark.tf214
def test_format_facts_says_what_matters(facts):
    text = machine.format_facts(MachineFacts.from_json(facts, "facts"))
    assert re.search(rf"^OpenMP +{re.escape(STOCK_TF_STATEMENT)}$", text, re.M)
    assert re.search(r"^CPU +.*\d+ physical cores, \d+ vCPUs usable", text, re.M)
    assert "ml.c5.2xlarge (asserted (--instance-type))" in text
    assert re.search(rf"^Fingerprint +{facts['host_fingerprint']}$", text, re.M)
    facts["gpu"] = {"count": 0, "devices": [], "driver_version": None, "reason": "NVML unavailable: X"}
    facts["tensorflow"] = machine.no_tensorflow("tensorflow is not installed", None)
    text = machine.format_facts(MachineFacts.from_json(facts, "facts"))
    assert re.search(r"^TensorFlow +unavailable: tensorflow is not installed$", text, re.M)
    assert re.search(r"^GPU +no GPU \(NVML unavailable: X\)$", text, re.M)


def test_physical_cores_of_a_cpu_subset():
    topology = machine.cpu_topology()
    assert topology and set(topology) <= set(range(os.cpu_count()))
    assert machine.physical_cores([min(topology)]) == 1
    assert machine.physical_cores() == len(set(topology.values()))
