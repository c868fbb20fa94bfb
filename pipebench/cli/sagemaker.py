"""`pipebench sagemaker launch` and `sagemaker collect`: the experiment as SageMaker training jobs."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from pipebench.cli.options import number


def add_sagemaker(commands: argparse._SubParsersAction) -> None:
    """Add `sagemaker launch` and `sagemaker collect`."""
    sagemaker = commands.add_parser("sagemaker", help="run the experiment as SageMaker training jobs, collect results")
    sagemaker = sagemaker.add_subparsers(dest="sagemaker_command", required=True, metavar="SAGEMAKER_COMMAND")
    launch = sagemaker.add_parser("launch", help="one training job per instance type x input mode (boto3)")
    launch.add_argument("experiment", type=Path, help="experiment YAML (e.g. experiments/deepfm.yaml)")
    launch.add_argument("--instance-type", action="append", required=True, metavar="TYPE",
                        help="e.g. ml.c5.9xlarge (repeatable)")
    launch.add_argument("--input-mode", action="append", required=True, choices=("File", "FastFile", "Pipe"),
                        help="the data channel's TrainingInputMode (repeatable)")
    launch.add_argument("--role", required=True, metavar="ARN", help="the SageMaker execution role")
    launch.add_argument("--s3", required=True, metavar="S3_URI",
                        help="launch folder s3://bucket/prefix: experiment, data and job outputs go here")
    launch.add_argument("--image-uri", metavar="URI", help="a custom training image with pipebench installed "
                        "(default: $PIPEBENCH_IMAGE_URI; its entry point is python3 -m pipebench.sagemaker.entry); "
                        "without one, SageMaker's TensorFlow image runs pipebench's uploaded source (script mode)")
    launch.add_argument("--tf-version", metavar="X.Y",
                        help="TensorFlow of the official image: 2.14 (default; the only one with Pipe mode), 2.16, "
                        "2.18 or 2.19")
    launch.add_argument("--region", metavar="REGION", help="AWS region (default: boto3's, e.g. $AWS_DEFAULT_REGION)")
    launch.add_argument("--data-workers", action="append", default=[], metavar="TYPE:COUNT",
                        help="add an instance group of tf.data service data workers, e.g. ml.c5.18xlarge:2 "
                        "(repeatable, at most 4; the trainer group is --instance-type x --instance-count)")
    launch.add_argument("--format", choices=("libsvm", "tfrecord", "packed"), default="tfrecord",
                        help="the data format the jobs receive (default tfrecord)")
    launch.add_argument("--sharded", action="store_true",
                        help="S3DataDistributionType ShardedByS3Key (whole files split across hosts)")
    launch.add_argument("--instance-count", type=number(int, 1, 100), default=1, help="hosts per job (default 1)")
    launch.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting")
    launch.add_argument("--quick", action="store_true", help="apply the experiment's `quick:` overrides")
    launch.add_argument("--dry-run", action="store_true",
                        help="print what would be uploaded where and the CreateTrainingJob requests (one JSON "
                        "object); upload and submit nothing")
    launch.set_defaults(func=_cmd_sagemaker_launch)
    collect = sagemaker.add_parser("collect", help="download the launched jobs' results into one results folder")
    collect.add_argument("s3_uri", metavar="S3_URI", help="the launch folder given to launch --s3")
    collect.add_argument("--out", type=Path, required=True, help="results folder to write (must not exist)")
    collect.add_argument("--force", action="store_true", help="replace --out if it exists")
    collect.set_defaults(func=_cmd_sagemaker_collect)


def _cmd_sagemaker_launch(args: argparse.Namespace) -> int:
    from pipebench.config import load_experiment
    from pipebench.sagemaker.cluster import parse_data_workers
    from pipebench.sagemaker.launch import plan, submit

    image = args.image_uri or os.environ.get("PIPEBENCH_IMAGE_URI") or None
    data_workers = tuple(parse_data_workers(text) for text in args.data_workers)
    experiment = load_experiment(args.experiment, tuple(args.set), quick=args.quick)
    launch = plan(experiment, instance_types=args.instance_type, input_modes=args.input_mode, role_arn=args.role,
                  s3_uri=args.s3, image_uri=image, region=args.region, tf_version=args.tf_version,
                  data_format=args.format, sharded=args.sharded, instance_count=args.instance_count,
                  data_workers=data_workers)
    if args.dry_run:
        print(json.dumps({"uploads": launch.uploads(), "requests": launch.requests}, indent=2))
        return 0
    manifest = submit(launch, log=lambda text: print(text, flush=True))
    print(f"launched {len(manifest.jobs)} job(s); when they finish: "
          f"pipebench sagemaker collect {launch.uri} --out DIR")
    return 0


def _cmd_sagemaker_collect(args: argparse.Namespace) -> int:
    from pipebench.sagemaker.collect import collect

    out = collect(args.s3_uri, args.out, force=args.force, log=lambda text: print(text, flush=True))
    print(f"wrote {out}: trials.parquet and samples.parquet of every job, one run folder per "
          "instance type / input mode / host")
    return 0
