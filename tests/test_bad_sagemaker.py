"""Bad-input corpus for `sagemaker launch` and `sagemaker collect`: bucket names S3 refuses, and output archives
and launch manifests written by whatever ran in the job's container.

An archive is untrusted data: a path in it (a member's name, job.json's `run_dir`) must stay inside the
host's unpacked folder, job.json is typed and versioned, and its names must be the launched job's. Every
collect case's folder holds `mine`, a run folder of the user's, which the corpus check proves is left
byte-identical (collect used to move it into --out when a job.json named it, and to delete it when a
later host's job.json was broken). The jobs run in moto on loopback.
"""
from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
import yaml
from badinput import Bad, cases
from collect_fixtures import IMAGE, LAUNCH_URI, MISSING, ROLE, RUN_DIR, Archive, collect_case, host, member
from sagemaker_fixtures import TINY

#: The output archive of the first (File) or second (FastFile) job.
ARCHIVE = r"s3://bench/launch/output/tiny-c5-xlarge-(file|fastfile)-[\d-]+/output/output\.tar\.gz"
JOB = ARCHIVE + r": algo-1/job\.json: "
COLLECT = ("sagemaker", "collect", LAUNCH_URI, "--out", "{tmp}/merged")
RUN = RUN_DIR.replace(".", r"\.")


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
        r"\(64 characters\): 64 characters \(3 to 63\) \(S3's bucket naming rules\)$", make=_experiment, code=2, process=True),
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
        r"\(S3's bucket naming rules\)$", out="merged", code=2, process=True),
]


def _collect(name: str, says: str, *archives: Archive, manifest=None, code: int = 1) -> Bad:
    return Bad(f"collect-{name}", COLLECT, says, make=collect_case(*archives, manifest=manifest), out="merged",
               code=code)


def _job(name: str, says: str, **changes) -> Bad:
    """A case of one job and host whose job.json has `changes` (host() arguments)."""
    return _collect(name, "^" + JOB + says, Archive(hosts=(host(**changes),)))


ARCHIVE_CASES = [
    # paths in job.json: never outside the host's folder
    _job("run-dir-absolute", r"run_dir '/.*: not a folder inside the host's folder$", run_dir="{tmp}/mine"),
    _job("run-dir-dot-dot", r"run_dir '\.\./\.\./\.\./\.\./mine': not a folder inside the host's folder$",
         run_dir="../../../../mine"),
    _job("run-dir-missing", r"run_dir 'results/elsewhere': no such folder in the archive$", run_dir="results/elsewhere"),
    # names in job.json become folders of --out: they must be the launched job's
    _job("instance-type-escapes", r"instance_type '\.\./planted' is not the launched job's \(ml\.c5\.xlarge\)$",
         instance_type="../planted"),
    _job("instance-type-of-another-job", r"instance_type 'ml\.p3\.2xlarge' is not the launched job's "
         r"\(ml\.c5\.xlarge\)$", instance_type="ml.p3.2xlarge"),
    _job("input-mode-of-another-job", r"input_mode 'Pipe' is not the launched job's \(File\)$", input_mode="Pipe",
         source_mode="pipe"),
    _job("job-name-of-another-job", r"job_name 'someone-else' is not the launched job's \(tiny-c5-xlarge-file-[\d-]+\)$",
         job_name="someone-else"),
    _job("current-host-escapes", r"current_host '\.\./\.\./\.\./planted' is not the folder it is in \(algo-1\)$",
         current_host="../../../planted"),
    _job("source-mode-of-another-input-mode", r"source_mode 'pipe' does not go with input_mode File \(file\)$",
         source_mode="pipe"),
    # job.json's keys: typed, versioned, one line
    _job("job-missing-key", r"instance_type: missing$", instance_type=MISSING),
    _job("job-unknown-key", r"flavour: unknown key \(expected one of schema_version, .*\)$", flavour="vanilla"),
    _job("job-wrong-type", r"num_cpus: must be int, not str 'four'$", num_cpus="four"),
    _job("job-hosts-not-a-list", r"hosts: must be a list, not str 'algo-1'$", hosts="algo-1"),
    _collect("job-not-json", rf"^{ARCHIVE}: algo-1/job\.json:1: not valid JSON: Expecting property name enclosed in "
             "double quotes$", Archive(hosts=(host(job_text="{"),))),
    _job("job-not-an-object", r"not a job record \(a JSON list, not an object\)$", job_text="[]"),
    _job("job-no-version", r"not a job record \(no schema_version\)$", schema_version=MISSING),
    _job("job-newer-version", r"schema_version 2 was written by a newer pipebench \(this one reads 1\): update "
         r"pipebench$", schema_version=2),
    # the run folder: read by the run-folder reader before anything is moved
    _collect("run-folder-without-machine-facts", rf"^{ARCHIVE}: algo-1/{RUN}/machine\.json: missing",
             Archive(hosts=(host(files={"machine.json": None}),))),
    _collect("run-folder-damaged-table", rf"^{ARCHIVE}: algo-1/{RUN}/trials\.parquet: ",
             Archive(hosts=(host(files={"trials.parquet": b"PAR1 not a table"}),))),
    # a second host or job broken after a first one
    _collect("second-host-broken", rf"^{ARCHIVE}: algo-2/job\.json: instance_type: missing$",
             Archive(hosts=(host(), host("algo-2", instance_type=MISSING)))),
    _collect("moved-folder-then-broken-host", rf"^{JOB}run_dir '/.*: not a folder inside the host's folder$",
             Archive(hosts=(host(run_dir="{tmp}/mine", run=False), host("algo-2", instance_type=MISSING)))),
    _collect("second-job-not-a-tarball", rf"^{ARCHIVE}: not a readable tar\.gz: ", Archive(hosts=(host(),)),
             Archive(raw=b"not a tarball")),
    _collect("moved-folder-then-broken-job", rf"^{JOB}run_dir '/.*: not a folder inside the host's folder$",
             Archive(hosts=(host(run_dir="{tmp}/mine", run=False),)), Archive(raw=b"not a tarball")),
    # members of the archive: plain files and folders inside it, each once
    _collect("member-absolute", rf"^{ARCHIVE}: member '/tmp/pipebench-planted': an absolute path$",
             Archive(hosts=(host(),), members=(member("/tmp/pipebench-planted", data=b"x"),))),
    _collect("member-dot-dot", rf"^{ARCHIVE}: member '\.\./\.\./\.\./\.\./planted': leaves the archive's folder$",
             Archive(hosts=(host(),), members=(member("../../../../planted", data=b"x"),))),
    _collect("member-symlink", rf"^{ARCHIVE}: member 'algo-1/link': a symbolic link, not a file or folder$",
             Archive(hosts=(host(),), members=(member("algo-1/link", tarfile.SYMTYPE, linkname="/"),
                                               member("algo-1/link/planted", data=b"x")))),
    _collect("member-hard-link", rf"^{ARCHIVE}: member 'algo-1/passwd': a hard link, not a file or folder$",
             Archive(hosts=(host(),), members=(member("algo-1/passwd", tarfile.LNKTYPE, linkname="/etc/passwd"),))),
    _collect("member-device", rf"^{ARCHIVE}: member 'algo-1/null': a device, not a file or folder$",
             Archive(hosts=(host(),), members=(member("algo-1/null", tarfile.CHRTYPE),))),
    _collect("member-fifo", rf"^{ARCHIVE}: member 'algo-1/fifo': a FIFO, not a file or folder$",
             Archive(hosts=(host(),), members=(member("algo-1/fifo", tarfile.FIFOTYPE),))),
    _collect("member-twice", rf"^{ARCHIVE}: member 'algo-1/job\.json': named twice in the archive$",
             Archive(hosts=(host(),), members=(member("algo-1/job.json", data=b"{}"),))),
    # bounded cost: a hostile archive stops at a cap, not after it is read (the member declares 5 GiB it lacks)
    _collect("member-over-the-unpacked-cap", rf"^{ARCHIVE}: holds more than 100,000 members or 4,294,967,296 bytes "
             "unpacked, more than a pipebench job writes; not collected$",
             Archive(hosts=(host(),), members=(member("algo-1/bomb", size=5 << 30),))),
    _job("job-over-its-cap", r"larger than 1,048,576 bytes; not a job record pipebench wrote$",
         job_text="{" + " " * (2 << 20) + "}"),
    _collect("no-job-json", rf"^{ARCHIVE}: no job\.json inside; not written by pipebench's SageMaker entry point$",
             Archive(members=(member("algo-1/notes.txt", data=b"x"),))),
    # the launch manifest, also read from S3
    _collect("manifest-missing-jobs", r"^s3://bench/launch/pipebench-launch\.json: jobs: missing$",
             Archive(hosts=(host(),)), manifest=lambda m: {k: v for k, v in m.items() if k != "jobs"}),
    _collect("manifest-job-name-escapes", r"^s3://bench/launch/pipebench-launch\.json: jobs\[0\]\.name: "
             r"'\.\./\.\./planted' is not a training job name$", Archive(hosts=(host(),)),
             manifest=lambda m: {**m, "jobs": [{**m["jobs"][0], "name": "../../planted"}]}),
    _collect("manifest-no-version", r"^s3://bench/launch/pipebench-launch\.json: not a launch manifest "
             r"\(no schema_version\)$", Archive(hosts=(host(),)),
             manifest=lambda m: {k: v for k, v in m.items() if k != "schema_version"}),
]


@pytest.mark.parametrize("case", cases(LAUNCH_CASES))
def test_launch_refuses(case, tmp_path, run_case):
    run_case(case, tmp_path)


@pytest.mark.parametrize("case", cases(ARCHIVE_CASES))
def test_collect_refuses(case, tmp_path, aws, run_case):
    run_case(case, tmp_path)
