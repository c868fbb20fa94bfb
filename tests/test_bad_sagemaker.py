"""Bad-input corpus for `sagemaker launch` and `sagemaker collect`: bucket names S3 refuses."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from badinput import Bad, run_case
from sagemaker_fixtures import TINY

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/pipebench:latest"


def _experiment(folder: Path) -> None:
    (folder / "exp.yaml").write_text(yaml.safe_dump(TINY))


def _launch(s3: str) -> tuple[str, ...]:
    return ("sagemaker", "launch", "exp.yaml", "--instance-type", "ml.c5.xlarge", "--input-mode", "File", "--role",
            ROLE, "--s3", s3, "--image-uri", IMAGE, "--dry-run")


def _bucket(name: str, s3: str, why: str) -> Bad:
    return Bad(f"launch-bucket-{name}", _launch(s3), rf"^{re.escape(s3)}: bucket .*: {why} \(S3's bucket naming rules\)$",
               make=_experiment, code=2)


LAUNCH_CASES = [
    _bucket("space", "s3://my bucket/p", r"only lowercase letters, digits, '\.' and '-' \(not ' '\)"),
    _bucket("upper-case", "s3://MyBucket/p", r"only lowercase letters, digits, '\.' and '-' \(not 'B', 'M'\)"),
    _bucket("underscore", "s3://my_bucket/p", r"only lowercase letters, digits, '\.' and '-' \(not '_'\)"),
    _bucket("too-short", "s3://ab/p", r"2 characters \(3 to 63\)"),
    Bad("launch-bucket-too-long", _launch(f"s3://{'a' * 64}/p"), r"^'s3://a+… \(71 characters\): bucket 'a+… "
        r"\(64 characters\): 64 characters \(3 to 63\) \(S3's bucket naming rules\)$", make=_experiment, code=2),
    _bucket("hyphen-end", "s3://bucket-/p", "must begin and end with a letter or digit"),
    _bucket("dot-start", "s3://.bucket/p", "must begin and end with a letter or digit"),
    _bucket("adjacent-dots", "s3://my..bucket/p", "two adjacent dots"),
    _bucket("ip-address", "s3://192.168.5.4/p", "formatted as an IP address"),
    _bucket("prefix-xn", "s3://xn--bucket/p", "begins with the reserved prefix 'xn--'"),
    _bucket("prefix-sthree", "s3://sthree-bucket/p", "begins with the reserved prefix 'sthree-'"),
    _bucket("prefix-demo", "s3://amzn-s3-demo-bucket/p", "begins with the reserved prefix 'amzn-s3-demo-'"),
    _bucket("suffix-alias", "s3://bucket-s3alias/p", "ends with the reserved suffix '-s3alias'"),
    _bucket("suffix-object-lambda", "s3://bucket--ol-s3/p", "ends with the reserved suffix '--ol-s3'"),
    _bucket("suffix-mrap", "s3://bucket.mrap/p", r"ends with the reserved suffix '\.mrap'"),
    _bucket("suffix-directory", "s3://bucket--x-s3/p", "ends with the reserved suffix '--x-s3'"),
    _bucket("suffix-table", "s3://bucket--table-s3/p", "ends with the reserved suffix '--table-s3'"),
    Bad("launch-prefix-empty-segment", _launch("s3://bench/a//b"), r"^s3://bench/a//b: key prefix 'a//b': "
        r"an empty part \(//\)$", make=_experiment, code=2),
    Bad("launch-prefix-dot-dot", _launch("s3://bench/a/../b"), r"^s3://bench/a/\.\./b: key prefix 'a/\.\./b': "
        r"a '\.\.' part$", make=_experiment, code=2),
    Bad("launch-prefix-control-character", _launch("s3://bench/a\tb"), r"^'s3://bench/a\\tb': key prefix 'a\\tb': "
        r"a control character$", make=_experiment, code=2),
    Bad("collect-bucket-upper-case", ("sagemaker", "collect", "s3://My_Bucket/p", "--out", "{tmp}/merged"),
        r"^s3://My_Bucket/p: bucket 'My_Bucket': only lowercase letters, digits, '\.' and '-' \(not 'B', 'M', '_'\) "
        r"\(S3's bucket naming rules\)$", out="merged", code=2),
]


@pytest.mark.parametrize("case", LAUNCH_CASES, ids=str)
def test_launch_refuses(case, tmp_path):
    run_case(case, tmp_path)
