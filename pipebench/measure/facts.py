"""`MachineFacts`: what machine.json records about a host, typed and versioned (no TensorFlow import).

`pipebench.measure.machine` produces it; run folders store it as machine.json; reports, the
checklist and the search read its attributes, so a wrong path fails in tests instead of printing
`?`. A machine.json of another layout version gives ResultsVersionError with what to do.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipebench.typed import from_json, read_json, to_json
from pipebench.versioned import VERSION_KEY, WAS, check_version

#: machine.json layout. 1 (pipebench ≤ 0.1.0) had no version key and `sagemaker.hosts`.
FACTS_VERSION = 2


@dataclass(frozen=True)
class CpuFacts:
    """The CPUs this process may use and the host they belong to."""

    model: str | None
    sockets: int | None
    physical_cores: int
    online_cpus: int | None
    vcpus: int  # CPUs in this process's affinity: what trials can use
    physical_cores_in_affinity: int
    isa: tuple[str, ...]  # the oneDNN-relevant CPU features present


@dataclass(frozen=True)
class OsFacts:
    system: str
    kernel: str
    distribution: str | None


@dataclass(frozen=True)
class PythonFacts:
    version: str
    implementation: str
    executable: str


@dataclass(frozen=True)
class OneDnnFacts:
    """Whether oneDNN is on in TF ops, the build's default, TF_ENABLE_ONEDNN_OPTS, and a sentence saying so."""

    enabled: bool | None
    build_default: bool | None
    env: str | None
    statement: str


@dataclass(frozen=True)
class OpenMpFacts:
    """Whether an OpenMP runtime is linked into TF: without one, KMP_* and OMP_NUM_THREADS change nothing."""

    linked: bool | None
    runtimes: tuple[str, ...]
    needed_by: dict[str, tuple[str, ...]]  # TF library → OpenMP runtimes in its DT_NEEDED
    loaded: tuple[str, ...]  # OpenMP runtimes mapped into a process that imported TF and ran an op
    statement: str


@dataclass(frozen=True)
class PipeModeFacts:
    """Whether sagemaker_tensorflow's PipeModeDataset imports beside this TF, and why not."""

    importable: bool
    reason: str | None


@dataclass(frozen=True)
class TensorFlowProbe:
    """What the TF-facts child prints (`python -m pipebench.measure.machine --tensorflow`), read strictly: the
    parent composes TensorFlowFacts from the children with and without TF_ENABLE_ONEDNN_OPTS."""

    version: str
    git_version: str
    keras_version: str | None  # None: keras does not import
    library_dir: str
    cuda_build: bool
    cuda_version: str | None
    cudnn_version: str | None
    gpus_visible: int
    onednn_enabled: bool  # in this child's environment
    openmp_needed: dict[str, tuple[str, ...]]  # TF library → OpenMP runtimes in its DT_NEEDED
    openmp_loaded: tuple[str, ...]  # OpenMP runtimes mapped once an op ran
    sagemaker_tensorflow: PipeModeFacts


@dataclass(frozen=True)
class TensorFlowFacts:
    """TF's version and build; every field but the three below is None when TF does not import (`error` says why)."""

    importable: bool
    error: str | None
    version: str | None
    git_version: str | None
    keras_version: str | None
    library_dir: str | None
    cuda_build: bool | None
    cuda_version: str | None
    cudnn_version: str | None
    gpus_visible: int | None
    onednn: OneDnnFacts
    openmp: OpenMpFacts
    sagemaker_tensorflow: PipeModeFacts


@dataclass(frozen=True)
class GpuDevice:
    index: int
    name: str
    memory_total_bytes: int


@dataclass(frozen=True)
class GpuFacts:
    count: int
    devices: tuple[GpuDevice, ...]
    driver_version: str | None
    reason: str | None  # why there is no GPU reading (no NVML, no device)


@dataclass(frozen=True)
class SageMakerFacts:
    """The instance type and where that came from; SageMaker's own facts when inside a training job."""

    instance_type: str | None
    # "SM_CURRENT_INSTANCE_TYPE" inside a job; "asserted (--instance-type)" when a user named it.
    instance_type_source: str | None
    in_training_job: bool
    current_host: str | None
    host_count: int | None
    num_cpus: int | None
    num_gpus: int | None


@dataclass(frozen=True)
class MachineFacts:
    """Everything machine.json holds; `host_fingerprint` hashes the facts that decide speed."""

    schema_version: int
    collected_at: str
    pipebench_version: str
    cpu: CpuFacts
    memory_bytes: int | None
    os: OsFacts
    python: PythonFacts
    tensorflow: TensorFlowFacts
    gpu: GpuFacts
    sagemaker: SageMakerFacts
    host_fingerprint: str

    def headline(self) -> str:
        """Give the one line reports open with: CPU model, vCPUs / physical cores, TF version."""
        tf = self.tensorflow
        return (f"{self.cpu.model or 'unknown CPU model'}, {self.cpu.vcpus} vCPUs / {self.cpu.physical_cores} "
                f"physical cores, TensorFlow {tf.version if tf.importable else f'unavailable ({tf.error})'}")

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def from_json(cls, obj: object, file: str) -> MachineFacts:
        """Give the facts of a parsed machine.json; ResultsVersionError for another layout version."""
        found = check_version(obj, file, VERSION_KEY, FACTS_VERSION, "machine facts",
                              f"run `pipebench upgrade {Path(file).parent}`", WAS["machine.json"], absent=1)
        return from_json(cls, found, file)

    @classmethod
    def load(cls, path: Path) -> MachineFacts:
        """Give the facts stored at `path`; DataError (one line, naming the file) when it cannot be read."""
        return cls.from_json(read_json(path), str(path))


def upgrade_v1(obj: dict) -> dict:
    """Give a layout-1 machine.json document in layout 2.

    Layout 1 had no version key, kept the host count as `sagemaker.hosts`, and left out the TF
    build keys (and OpenMP's libraries) when TensorFlow did not import.
    """
    sagemaker = dict(obj.get("sagemaker") or {})
    if "hosts" in sagemaker:
        sagemaker["host_count"] = sagemaker.pop("hosts")
    tf = dict(obj.get("tensorflow") or {})
    for key in ("error", "version", "git_version", "keras_version", "library_dir", "cuda_build", "cuda_version",
                "cudnn_version", "gpus_visible"):
        tf.setdefault(key, None)
    tf["openmp"] = {"needed_by": {}, "loaded": [], **(tf.get("openmp") or {})}
    return {VERSION_KEY: FACTS_VERSION, **obj, "tensorflow": tf, "sagemaker": sagemaker}
