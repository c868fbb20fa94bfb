"""Amazon SageMaker: the container entry point, the job launcher and collector, TF_CONFIG helpers.

Nothing here imports boto3 or TensorFlow at module level: `launch` and `collect` import boto3 when
they talk to AWS, and the entry point imports TensorFlow only through the trials it runs.
"""
