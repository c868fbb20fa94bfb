"""Host facts every run stores (machine.json) and `pipebench env` prints.

CPU, memory, OS, GPU (NVML) and SageMaker facts are read in the calling process. TensorFlow facts
come from a child `python -m pipebench.measure.machine --tensorflow`, so the caller (the manager)
never imports TensorFlow. The child reports:

- the oneDNN default of this build on this CPU: TF's own `IsMKLEnabled()`, asked with
  TF_ENABLE_ONEDNN_OPTS unset. When the caller sets the variable, a second child run with it set
  says whether it took effect, so a build without oneDNN compiled in is not reported as "on";
- whether an OpenMP runtime is linked: the DT_NEEDED entries of every shared library in TF's
  folder, and the libraries mapped into the child (/proc/self/maps) after importing TF and running
  one op. Stock wheels link none, and then KMP_* and OMP_NUM_THREADS cannot affect TF ops;
- whether `sagemaker_tensorflow` (PipeModeDataset) imports beside this TF, and the error if not.

`host_fingerprint` is the first 16 hex digits of the SHA-256 of the JSON of: CPU model, sockets,
physical cores, vCPUs, memory in GiB (rounded, because MemTotal moves by a few MiB between boots
of one instance type), TF version, oneDNN on/off, the OpenMP runtimes linked, and GPU models.
Results with different fingerprints come from machines or builds that may not be compared.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import struct
import subprocess
import sys
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pipebench
from pipebench.errors import DataError
from pipebench.fingerprint import fingerprint
from pipebench.measure.facts import (
    FACTS_VERSION,
    MachineFacts,
    PipeModeFacts,
    TensorFlowProbe,
)
from pipebench.measure.sagemaker_host import read_host
from pipebench.typed import from_json, parse_json, to_json
from pipebench.versioned import VERSION_KEY

TF_CHILD_TIMEOUT_SEC = 180
ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"
#: CPU features oneDNN's speed (and, on some TF versions, its default) depends on.
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")
_OPENMP_RUNTIME = re.compile(r"^lib(gomp|iomp5|omp)(-[0-9a-f]{8})?\.so(\.\d+)*$")
_SYSFS_CPU = Path("/sys/devices/system/cpu")


# ---------------------------------------------------------------- CPU, memory, OS

def cpu_topology() -> dict[int, tuple[int, int]]:
    """Give {cpu number: (socket, core)} for every online CPU; CPUs sharing a pair are hyperthreads."""
    topology = {}
    for cpu_dir in _SYSFS_CPU.glob("cpu[0-9]*"):
        try:
            socket = int((cpu_dir / "topology/physical_package_id").read_text())
            core = int((cpu_dir / "topology/core_id").read_text())
        except (OSError, ValueError):
            continue  # offline CPUs have no topology folder
        topology[int(cpu_dir.name[3:])] = (socket, core)
    return topology


def physical_cores(cpus: Iterable[int] | None = None) -> int:
    """Give the number of physical cores `cpus` (default: all online CPUs) run on."""
    topology = cpu_topology()
    if not topology:
        return os.cpu_count() or 1
    chosen = topology.keys() if cpus is None else [c for c in cpus if c in topology]
    return max(1, len({topology[c] for c in chosen}))


def _cpuinfo() -> dict[str, str]:
    """Give the first processor block of /proc/cpuinfo as {key: value}."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    info = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    return info


def cpu_facts() -> dict:
    """Give CPU model, sockets, physical cores, vCPUs this process may use, and oneDNN-relevant flags."""
    info = _cpuinfo()
    topology = cpu_topology()
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    flags = set(info.get("flags", "").split())
    return {
        "model": info.get("model name") or info.get("Model") or platform.processor() or None,
        "sockets": len({socket for socket, _ in topology.values()}) or None,
        "physical_cores": physical_cores(),
        "online_cpus": os.cpu_count(),
        "vcpus": len(affinity),
        "physical_cores_in_affinity": physical_cores(affinity),
        "isa": [flag for flag in ISA_FLAGS if flag in flags],
    }


def memory_bytes() -> int | None:
    """Give the host's physical memory in bytes."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def os_facts() -> dict:
    """Give the OS name, kernel release and distribution."""
    try:
        distribution = platform.freedesktop_os_release().get("PRETTY_NAME")
    except (OSError, AttributeError):
        distribution = None
    return {"system": platform.system(), "kernel": platform.release(), "distribution": distribution}


def python_facts() -> dict:
    """Give the version and path of the interpreter workers will run (the same as this one)."""
    return {"version": platform.python_version(), "implementation": platform.python_implementation(),
            "executable": sys.executable}


# ---------------------------------------------------------------- GPU through NVML

def open_nvml(nvml: ModuleType | None = None) -> tuple[ModuleType | None, str | None]:
    """Give (initialised NVML module, None), or (None, why there is none); call nvmlShutdown when done."""
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            return None, "nvidia-ml-py is not installed"
    try:
        nvml.nvmlInit()
    except Exception as error:  # pynvml raises NVMLError subclasses; fakes may raise anything
        return None, f"NVML unavailable: {error}"
    return nvml, None


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value  # nvidia-ml-py < 11.5 gave bytes


def gpu_facts(nvml: ModuleType | None = None) -> dict:
    """Give GPU count, models, memory and driver version through NVML, or count 0 and the reason."""
    nvml, reason = open_nvml(nvml)
    if nvml is None:
        return {"count": 0, "devices": [], "driver_version": None, "reason": reason}
    try:
        devices = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            devices.append({"index": index, "name": _text(nvml.nvmlDeviceGetName(handle)),
                            "memory_total_bytes": int(nvml.nvmlDeviceGetMemoryInfo(handle).total)})
        driver = _text(nvml.nvmlSystemGetDriverVersion())
    finally:
        nvml.nvmlShutdown()
    return {"count": len(devices), "devices": devices, "driver_version": driver,
            "reason": None if devices else "NVML sees no GPU"}


# ---------------------------------------------------------------- TensorFlow build facts

def openmp_runtimes(libraries: Iterable[str]) -> list[str]:
    """Give the sorted, distinct file names among `libraries` (paths or names) that are OpenMP runtimes.

    libgomp (GNU), libiomp5 (Intel, what MKL builds of TF ship), libomp (LLVM), also as auditwheel
    renames them (libgomp-a34b3233.so.1).
    """
    return sorted({Path(lib).name for lib in libraries if _OPENMP_RUNTIME.match(Path(lib).name)})


def elf_needed(path: Path) -> list[str]:
    """Give the DT_NEEDED entries of an ELF shared library, or [] if `path` is not one (or is damaged)."""
    with open(path, "rb") as f:
        data = f.read(64)
        if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
            return []
        wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
        # e_shoff, then e_shentsize and e_shnum, at their ELF64 / ELF32 offsets
        (shoff,) = struct.unpack_from(order + ("Q" if wide else "I"), data, 40 if wide else 32)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 58 if wide else 46)
        section = struct.Struct(order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII"))
        entry = struct.Struct(order + ("qQ" if wide else "iI"))
        if shentsize < section.size:
            return []
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        sections = [section.unpack_from(table, i * shentsize) for i in range(len(table) // shentsize)]
        needed = []
        try:
            for _, kind, _, _, offset, size, link, *_ in sections:
                if kind != 6 or link >= len(sections):  # SHT_DYNAMIC; sh_link names its string table
                    continue
                f.seek(offset)
                entries = f.read(size - size % entry.size)
                f.seek(sections[link][4])
                strings = f.read(sections[link][5])
                for tag, value in entry.iter_unpack(entries):
                    if tag == 0:  # DT_NULL ends the table
                        break
                    if tag == 1:  # DT_NEEDED: an offset into the string table
                        needed.append(strings[value: strings.index(b"\0", value)].decode(errors="replace"))
        except (ValueError, OSError):
            return []
        return needed


def _mapped_libraries() -> list[str]:
    """Give the paths of the files mapped into this process."""
    with open("/proc/self/maps") as f:
        return sorted({line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6})


def _build_text(value: object) -> str | None:
    """Give a build-info value as text (TF has given versions as numbers), None for none."""
    return None if value is None else str(value)


def tensorflow_facts() -> TensorFlowProbe:
    """Import TensorFlow here and give its version and build facts (the child's half of machine_facts)."""
    import tensorflow as tf
    from tensorflow.python.util import _pywrap_util_port

    tf.linalg.matmul(tf.ones([2, 2]), tf.ones([2, 2])).numpy()  # load whatever the first op loads
    library_dir = Path(tf.sysconfig.get_lib())
    needed = {}
    for library in sorted(library_dir.rglob("*.so*")):
        if library.is_file():
            runtimes = openmp_runtimes(elf_needed(library))
            if runtimes:
                needed[str(library.relative_to(library_dir))] = runtimes
    build = tf.sysconfig.get_build_info()
    try:
        import keras
        keras_version = keras.__version__
    except ImportError:
        keras_version = None
    if importlib.util.find_spec("sagemaker_tensorflow") is None:
        pipe_mode = PipeModeFacts(False, "sagemaker_tensorflow is not installed")
    else:
        try:
            from sagemaker_tensorflow import PipeModeDataset  # noqa: F401
            pipe_mode = PipeModeFacts(True, None)
        except Exception as error:  # an op library built for another TF fails with an undefined symbol
            pipe_mode = PipeModeFacts(False, f"{type(error).__name__}: {error}")
    return TensorFlowProbe(
        version=tf.__version__, git_version=tf.version.GIT_VERSION, keras_version=keras_version,
        library_dir=str(library_dir), cuda_build=bool(build.get("is_cuda_build")),
        cuda_version=_build_text(build.get("cuda_version")), cudnn_version=_build_text(build.get("cudnn_version")),
        gpus_visible=len(tf.config.list_physical_devices("GPU")),
        onednn_enabled=bool(_pywrap_util_port.IsMklEnabled()),
        openmp_needed={k: tuple(v) for k, v in needed.items()},
        openmp_loaded=tuple(lib for lib in _mapped_libraries() if openmp_runtimes([lib])),
        sagemaker_tensorflow=pipe_mode)


def read_probe(stdout: str) -> TensorFlowProbe | str:
    """Give the TF-facts child's facts from its stdout (its last line: TF may print before it), or why not."""
    where = "the TensorFlow facts child"
    try:
        return from_json(TensorFlowProbe, parse_json(stdout.strip().splitlines()[-1].encode(), where), where)
    except DataError as err:
        return str(err)


def _run_tensorflow_child(env: dict[str, str]) -> TensorFlowProbe | str:
    """Give tensorflow_facts() from a fresh interpreter, or why it failed."""
    env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(pipebench.__file__).parents[1]),
                                                                 env.get("PYTHONPATH")]))}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        child = subprocess.run([sys.executable, "-m", "pipebench.measure.machine", "--tensorflow"], env=env,
                               capture_output=True, text=True, timeout=TF_CHILD_TIMEOUT_SEC)
    except subprocess.TimeoutExpired:
        return f"importing TensorFlow took over {TF_CHILD_TIMEOUT_SEC} s"
    if child.returncode == 0 and child.stdout.strip():
        return read_probe(child.stdout)
    tail = [line for line in child.stderr.splitlines() if line.strip()][-1:] or [f"exit code {child.returncode}"]
    return tail[0]


def onednn_facts(build_default: bool | None, enabled: bool | None, env_value: str | None) -> dict:
    """Give oneDNN on/off, the build's default, the variable's value, and one sentence saying so."""
    if enabled is None:
        statement = "unknown (TensorFlow facts unavailable)"
    else:
        state = "on" if enabled else "off"
        asked = {"1": True, "true": True, "0": False, "false": False}.get((env_value or "").lower())
        if env_value is None:
            statement = f"{state} (this build's default on this CPU; {ONEDNN_ENV} unset)"
        elif asked is None:
            statement = (f"{state}: TF ignores {ONEDNN_ENV}={env_value!r} (not 0, 1, true or false) "
                         "and keeps its default")
        elif asked != enabled:
            statement = f"{state}: {ONEDNN_ENV}={env_value} has no effect on this build"
        else:
            default = "on" if build_default else "off"
            statement = f"{state} ({ONEDNN_ENV}={env_value}; this build's default on this CPU is {default})"
    return {"enabled": enabled, "build_default": build_default, "env": env_value, "statement": statement}


def openmp_facts(needed: dict[str, tuple[str, ...]] | None, loaded: tuple[str, ...] | None) -> dict:
    """Give whether an OpenMP runtime is linked into TF, which, and what that means for KMP_*/OMP_*."""
    if needed is None or loaded is None:
        return {"linked": None, "runtimes": [], "needed_by": {}, "loaded": [],
                "statement": "unknown (TensorFlow facts unavailable)"}
    runtimes = openmp_runtimes([*(lib for libs in needed.values() for lib in libs), *loaded])
    if runtimes:
        statement = (f"OpenMP runtime linked ({', '.join(runtimes)}): KMP_* and OMP_NUM_THREADS can affect "
                     "TF ops on this build")
    else:
        statement = "no OpenMP runtime linked: KMP_* and OMP_NUM_THREADS cannot affect TF ops on this build"
    return {"linked": bool(runtimes), "runtimes": runtimes, "needed_by": {k: list(v) for k, v in needed.items()},
            "loaded": list(loaded), "statement": statement}


def no_tensorflow(error: str, env_value: str | None) -> dict:
    """Give the TensorFlow facts of a host where TF does not import: every build fact unknown, and why."""
    return {"importable": False, "error": error,
            **dict.fromkeys(("version", "git_version", "keras_version", "library_dir", "cuda_build", "cuda_version",
                             "cudnn_version", "gpus_visible")),
            "onednn": onednn_facts(None, None, env_value), "openmp": openmp_facts(None, None),
            "sagemaker_tensorflow": {"importable": False, "reason": error}}


def tensorflow_summary(env: dict[str, str] | None = None) -> dict:
    """Give TF version and build facts gathered in child processes, never importing TF here."""
    env = dict(os.environ if env is None else env)
    if importlib.util.find_spec("tensorflow") is None:
        return no_tensorflow("tensorflow is not installed", env.get(ONEDNN_ENV))
    env_value = env.get(ONEDNN_ENV)
    default_env = {k: v for k, v in env.items() if k != ONEDNN_ENV}
    with ThreadPoolExecutor(2) as pool:  # the two imports overlap; the second runs only when the variable is set
        default_run = pool.submit(_run_tensorflow_child, default_env)
        asked_run = pool.submit(_run_tensorflow_child, env) if env_value is not None else None
        facts = default_run.result()
        asked = asked_run.result() if asked_run else facts
    for found in (facts, asked):
        if isinstance(found, str):
            return no_tensorflow(found, env_value)
    return {
        "importable": True,
        "error": None,
        "version": facts.version, "git_version": facts.git_version, "keras_version": facts.keras_version,
        "library_dir": facts.library_dir, "cuda_build": facts.cuda_build, "cuda_version": facts.cuda_version,
        "cudnn_version": facts.cudnn_version, "gpus_visible": facts.gpus_visible,
        "onednn": onednn_facts(facts.onednn_enabled, asked.onednn_enabled, env_value),
        "openmp": openmp_facts(facts.openmp_needed, facts.openmp_loaded),
        "sagemaker_tensorflow": to_json(facts.sagemaker_tensorflow),
    }


# ---------------------------------------------------------------- SageMaker, fingerprint, all facts

#: How machine facts say where an instance type came from.
INSTANCE_TYPE_FROM_SAGEMAKER = "SM_CURRENT_INSTANCE_TYPE"
INSTANCE_TYPE_ASSERTED = "asserted (--instance-type)"


def sagemaker_facts(instance_type: str | None = None, env: Mapping[str, str] | None = None) -> dict:
    """Give the instance type and SageMaker's own facts (pipebench.measure.sagemaker_host, the entry point's too).

    Inside a training job SageMaker's instance type (SM_CURRENT_INSTANCE_TYPE, else resourceconfig.json)
    is the instance type. Elsewhere a user may name it (`--instance-type`, for the checklist's cost
    ranking): it is recorded as asserted, and the host is still not a training job.
    """
    host = read_host(os.environ if env is None else env)
    return {
        "instance_type": host.instance_type or instance_type,
        "instance_type_source": INSTANCE_TYPE_FROM_SAGEMAKER if host.instance_type
        else INSTANCE_TYPE_ASSERTED if instance_type else None,
        "in_training_job": host.in_training_job,
        "current_host": host.current_host,
        "host_count": len(host.hosts) or None,
        "num_cpus": host.num_cpus,
        "num_gpus": host.num_gpus,
    }


def host_fingerprint(facts: dict) -> str:
    """Give the fingerprint of the facts that decide speed (see the module docstring for which)."""
    tf_facts = facts["tensorflow"]
    memory = facts["memory_bytes"]
    key = {
        "cpu_model": facts["cpu"]["model"],
        "sockets": facts["cpu"]["sockets"],
        "physical_cores": facts["cpu"]["physical_cores"],
        "vcpus": facts["cpu"]["vcpus"],
        "memory_gib": round(memory / 2**30) if memory else None,
        "tensorflow": tf_facts.get("version"),
        "onednn": tf_facts["onednn"]["enabled"],
        "openmp": tf_facts["openmp"]["runtimes"],
        "gpus": [d["name"] for d in facts["gpu"]["devices"]],
    }
    return fingerprint(key)


def machine_facts(instance_type: str | None = None) -> MachineFacts:
    """Give the facts of this host and its TensorFlow (TF itself is asked in a child).

    `instance_type` is what a user asserts the host is (`--instance-type`); SageMaker's own
    variable wins inside a training job.
    """
    facts = {
        VERSION_KEY: FACTS_VERSION,
        "collected_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "pipebench_version": pipebench.__version__,
        "cpu": cpu_facts(),
        "memory_bytes": memory_bytes(),
        "os": os_facts(),
        "python": python_facts(),
        "tensorflow": tensorflow_summary(),
        "gpu": gpu_facts(),
        "sagemaker": sagemaker_facts(instance_type),
    }
    facts["host_fingerprint"] = host_fingerprint(facts)
    return MachineFacts.from_json(facts, "machine facts")


def format_facts(facts: MachineFacts) -> str:
    """Give the facts as the short aligned text `pipebench env` prints."""
    cpu, tf_facts, gpu, sm = facts.cpu, facts.tensorflow, facts.gpu, facts.sagemaker
    sockets = cpu.sockets
    cpu_line = (f"{cpu.model or 'unknown model'}, {sockets or 'unknown'} socket{'s' if sockets != 1 else ''}, "
                f"{cpu.physical_cores} physical cores, {cpu.vcpus} vCPUs usable")
    if cpu.vcpus != cpu.online_cpus:
        cpu_line += f" (affinity; {cpu.online_cpus} online)"
    memory = facts.memory_bytes
    os_info = facts.os
    if tf_facts.importable:
        tf_line = f"{tf_facts.version} (Keras {tf_facts.keras_version or 'not importable'}), "
        tf_line += f"CUDA build {tf_facts.cuda_version}" if tf_facts.cuda_build else "CPU-only build"
        if tf_facts.cuda_build:
            tf_line += f", {tf_facts.gpus_visible} GPU(s) visible to TF"
    else:
        tf_line = f"unavailable: {tf_facts.error}"
    pipe = tf_facts.sagemaker_tensorflow
    if gpu.count:
        names = sorted({d.name for d in gpu.devices})
        gpu_line = f"{gpu.count} × {', '.join(names)}, driver {gpu.driver_version}"
    else:
        gpu_line = f"no GPU ({gpu.reason})"
    if sm.instance_type:
        sm_line = f"{sm.instance_type} ({sm.instance_type_source})"
    else:
        sm_line = "instance type unknown (SageMaker sets SM_CURRENT_INSTANCE_TYPE; elsewhere pass --instance-type)"
    rows = [
        ("CPU", cpu_line),
        ("CPU features", " ".join(cpu.isa) or "none of " + " ".join(ISA_FLAGS)),
        ("Memory", f"{memory / 2**30:.1f} GiB" if memory else "unknown"),
        ("OS", f"{os_info.system} {os_info.kernel}" + (f" ({os_info.distribution})" if os_info.distribution else "")),
        ("Python", f"{facts.python.version} ({facts.python.executable})"),
        ("TensorFlow", tf_line),
        ("oneDNN", tf_facts.onednn.statement),
        ("OpenMP", tf_facts.openmp.statement),
        ("Pipe mode", "sagemaker_tensorflow imports (PipeModeDataset available)" if pipe.importable
         else f"sagemaker_tensorflow unavailable: {pipe.reason}"),
        ("GPU", gpu_line),
        ("SageMaker", sm_line + (" — inside a training job" if sm.in_training_job else "")),
        ("Fingerprint", facts.host_fingerprint),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)


def print_facts(instance_type: str | None = None, as_json: bool = False) -> int:
    """Print this host's facts (text, or JSON with as_json) and give exit code 0: `pipebench env`."""
    facts = machine_facts(instance_type)
    print(json.dumps(facts.to_json(), indent=2) if as_json else format_facts(facts))
    return 0


def main(argv: list[str] | None = None) -> int:
    """The TensorFlow-facts child's entry point (tensorflow_summary starts it); `pipebench env` is the command."""
    parser = argparse.ArgumentParser(prog="python -m pipebench.measure.machine",
                                     description="Print this TensorFlow's facts as JSON (the child machine_facts "
                                                 "starts); `pipebench env` prints the machine's facts.")
    parser.add_argument("--tensorflow", action="store_true", required=True, help="import TensorFlow here")
    parser.parse_args(argv)
    print(json.dumps(to_json(tensorflow_facts())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
