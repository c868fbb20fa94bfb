"""S3 URIs: s3://bucket/prefix parsed and joined, and a launch folder's checked by S3's naming rules.

`launch_folder` is what `sagemaker launch --s3` and `sagemaker collect` take: its bucket must follow
S3's rules for general-purpose bucket names, so a name S3 would refuse is a one-line usage error before
anything is sent (a dry run included). `parse_s3_uri` alone, for data files and AWS's own answers,
checks only the shape: a bucket made before 2018 in us-east-1 may still have a name the rules refuse.
"""
from __future__ import annotations

import re

from pipebench.errors import UsageError
from pipebench.values import echo, name_text

SCHEME = "s3://"
#: S3's general-purpose bucket naming rules (docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
BUCKET_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-")
RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
_IP_ADDRESS = re.compile(r"\d+\.\d+\.\d+\.\d+")


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """Give (bucket, key prefix without slashes at either end) of an s3://bucket/prefix URI."""
    if not uri.startswith(SCHEME):
        raise UsageError(f"{uri}: not an S3 URI (expected s3://bucket/prefix)")
    bucket, _, key = uri[len(SCHEME):].partition("/")
    if not bucket:
        raise UsageError(f"{uri}: no bucket name (expected s3://bucket/prefix)")
    return bucket, key.strip("/")


def s3_key(*parts: str) -> str:
    """Give the key a/b/c from the non-empty parts (an empty launch prefix is the bucket's root)."""
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


def s3_join(bucket: str, *parts: str) -> str:
    """Give s3://bucket/a/b from the non-empty parts."""
    return f"{SCHEME}{bucket}/{s3_key(*parts)}".rstrip("/")


def bucket_problem(name: str) -> str | None:
    """Give why S3 refuses `name` for a new general-purpose bucket, or None if it is a valid name."""
    if not 3 <= len(name) <= 63:
        return f"{len(name)} characters (3 to 63)"
    others = sorted(set(name) - BUCKET_CHARS)
    if others:
        return f"only lowercase letters, digits, '.' and '-' (not {', '.join(echo(c) for c in others[:5])})"
    if not (name[0].isalnum() and name[-1].isalnum()):
        return "must begin and end with a letter or digit"
    if ".." in name:
        return "two adjacent dots"
    if _IP_ADDRESS.fullmatch(name):
        return "formatted as an IP address"
    prefix = next((p for p in RESERVED_PREFIXES if name.startswith(p)), None)
    if prefix:
        return f"begins with the reserved prefix {prefix!r}"
    suffix = next((s for s in RESERVED_SUFFIXES if name.endswith(s)), None)
    if suffix:
        return f"ends with the reserved suffix {suffix!r}"
    return None


def _prefix_problem(prefix: str) -> str | None:
    """Give why a launch folder's key prefix is broken (keys the launch would write under it are odd), or None."""
    if not prefix.isprintable():
        return "a control character"
    parts = prefix.split("/") if prefix else []
    if "" in parts:
        return "an empty part (//)"
    dots = next((p for p in parts if p in (".", "..")), None)
    return f"a {dots!r} part" if dots else None


def launch_folder(uri: str) -> tuple[str, str]:
    """Give (bucket, prefix) of a launch folder s3://bucket/prefix; UsageError if S3 would refuse the bucket's
    name or the prefix is broken."""
    bucket, prefix = parse_s3_uri(uri)
    why = bucket_problem(bucket)
    if why:
        raise UsageError(f"{name_text(uri)}: bucket {echo(bucket)}: {why} (S3's bucket naming rules)")
    why = _prefix_problem(prefix)
    if why:
        raise UsageError(f"{name_text(uri)}: key prefix {echo(prefix)}: {why}")
    return bucket, prefix
