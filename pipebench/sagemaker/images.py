"""The official SageMaker TensorFlow training images: which URI a region, TF version and instance type get.

The table is a subset of the SageMaker Python SDK's image URI table, resolved the way its
`image_uris.retrieve("tensorflow", region, version, instance_type=..., image_scope="training")` does:
a version alias (2.14) names a full version (2.14.1), the region names the ECR account, the instance
family picks the processor (g* and p* → gpu, others → cpu), and the URI is
`<account>.dkr.<ECR host of the region>/tensorflow-training:<version>-<processor>-<py>`.

Source: github.com/aws/sagemaker-python-sdk, sagemaker-core/src/sagemaker/core/image_uri_config/
tensorflow.json ("training") and image_uris.py, commit a24812666d25 (2026-08-21), read 2026-11-23.
Only the versions pipebench runs on (TF >= 2.14) are copied; the SDK table lists no 2.15, 2.17 or
2.20 training image.

Pipe mode needs `sagemaker_tensorflow.PipeModeDataset`. The deep learning containers install the
`sagemaker-tensorflow` package in the TF 2.14 training images only (their 2.14 `core_packages.json`
pins `sagemaker_tensorflow==2.14.*`; the 2.16, 2.18 and 2.19 Dockerfiles install just
sagemaker-tensorflow-training), and PyPI has no sagemaker-tensorflow release past 2.14
(2.14.0.1.20.0), so `PIPE_MODE_VERSIONS` is 2.14 alone.
"""
from __future__ import annotations

import re

from pipebench.errors import UsageError

REPOSITORY = "tensorflow-training"
#: The default: the newest image whose Pipe mode works (sagemaker-tensorflow), as the reference DeepFM sample needs.
DEFAULT_TF_VERSION = "2.14"

#: Alias → full version, and each full version's Python tag (from the SDK's table).
VERSION_ALIASES = {"2.14": "2.14.1", "2.16": "2.16.2", "2.18": "2.18.0", "2.19": "2.19.0"}
PY_VERSIONS = {"2.14.1": "py310", "2.16.2": "py310", "2.18.0": "py310", "2.19.0": "py312"}

#: Full versions whose image has sagemaker-tensorflow (PipeModeDataset) installed.
PIPE_MODE_VERSIONS = frozenset({"2.14.1"})

#: Region → ECR account of the deep learning containers (the same account for every version listed).
REGISTRIES = {
    "af-south-1": "626614931356", "ap-east-1": "871362719292", "ap-east-2": "975050140332",
    "ap-northeast-1": "763104351884", "ap-northeast-2": "763104351884", "ap-northeast-3": "364406365360",
    "ap-south-1": "763104351884", "ap-south-2": "772153158452", "ap-southeast-1": "763104351884",
    "ap-southeast-2": "763104351884", "ap-southeast-3": "907027046896", "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462", "ap-southeast-6": "633930458069", "ap-southeast-7": "590183813437",
    "ca-central-1": "763104351884", "ca-west-1": "204538143572", "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807", "eu-central-1": "763104351884", "eu-central-2": "380420809688",
    "eu-north-1": "763104351884", "eu-south-1": "692866216735", "eu-south-2": "503227376785",
    "eu-west-1": "763104351884", "eu-west-2": "763104351884", "eu-west-3": "763104351884",
    "il-central-1": "780543022126", "me-central-1": "914824155844", "me-south-1": "217643126080",
    "mx-central-1": "637423239942", "sa-east-1": "763104351884", "us-east-1": "763104351884",
    "us-east-2": "763104351884", "us-gov-east-1": "446045086412", "us-gov-west-1": "442386744353",
    "us-iso-east-1": "886529160074", "us-isob-east-1": "094389454867", "us-isof-east-1": "303241398832",
    "us-isof-south-1": "454834333376", "us-west-1": "763104351884", "us-west-2": "763104351884",
}
#: The isolated regions the table lists for 2.14.1 only.
ONLY_2_14 = frozenset({"us-iso-east-1", "us-isob-east-1", "us-isof-east-1", "us-isof-south-1"})

#: ECR's DNS suffix per partition (botocore's endpoints.json: ecr.<region>.<suffix>).
_DNS_SUFFIX = (("cn-", "amazonaws.com.cn"), ("us-isob-", "sc2s.sgov.gov"), ("us-isof-", "csp.hci.ic.gov"),
               ("us-iso-", "c2s.ic.gov"))


def full_version(tf_version: str) -> str:
    """Give the image's full TF version for `tf_version` (an alias such as 2.14 or a full version)."""
    version = VERSION_ALIASES.get(tf_version, tf_version)
    if version not in PY_VERSIONS:
        raise UsageError(f"--tf-version {tf_version}: no SageMaker TensorFlow training image (versions: "
                         f"{', '.join(VERSION_ALIASES)}); give --image-uri for another")
    return version


def processor(instance_type: str) -> str:
    """Give `cpu` or `gpu` for an instance type, as the SDK does: families g* and p* are GPU instances."""
    match = re.fullmatch(r"ml\.([a-z0-9-]+)\.\w+", instance_type)
    if not match:
        raise UsageError(f"--instance-type {instance_type}: not a SageMaker instance type (ml.FAMILY.SIZE)")
    family = match[1]
    if family.startswith(("inf", "trn")):
        raise UsageError(f"--instance-type {instance_type}: no TensorFlow training image for {family} "
                         "(Inferentia / Trainium); give --image-uri")
    return "gpu" if family[0] in "gp" else "cpu"


def ecr_host(region: str) -> str:
    """Give the ECR host name of `region` (ecr.<region>.<partition's DNS suffix>)."""
    suffix = next((s for prefix, s in _DNS_SUFFIX if region.startswith(prefix)), "amazonaws.com")
    return f"ecr.{region}.{suffix}"


def training_image_uri(region: str, tf_version: str, instance_type: str) -> str:
    """Give the official TensorFlow training image for the region, TF version and the instance type's processor."""
    version = full_version(tf_version)
    if region not in REGISTRIES or (region in ONLY_2_14 and version != "2.14.1"):
        raise UsageError(f"--region {region}: no SageMaker TensorFlow {version} training image there "
                         "(SDK table of 2026-08-21); give --image-uri")
    tag = f"{version}-{processor(instance_type)}-{PY_VERSIONS[version]}"
    return f"{REGISTRIES[region]}.dkr.{ecr_host(region)}/{REPOSITORY}:{tag}"


def has_pipe_mode_dataset(tf_version: str) -> bool:
    """Give whether the official image of `tf_version` ships sagemaker-tensorflow (Pipe mode's dataset)."""
    return full_version(tf_version) in PIPE_MODE_VERSIONS
