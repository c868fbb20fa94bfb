"""`pipebench diagnose PATH.py:FUNCTION`: the slow stage of a user's own tf.data pipeline, rewrites proved by
paired measurement, and the rewritten input_fn.

Modules, in the order data flows (only those marked TF import TensorFlow, and only in the worker):

- target: `--set NAME=VALUE` parsed in the CLI process (`PATH.py:FUNCTION` is pipebench.pipeline.function's,
  shared with an experiment's `pipelines.functions`);
- pipebench.pipeline.user_code [TF], shared too: import the user's module, call the function, refuse what is
  not a tf.data.Dataset;
- pipebench.pipeline.walk [TF], shared: the stages TensorFlow runs (pipebench.pipeline.stages), from the source to
  the root, read from the dataset's graph whoever built them (library readers, `apply`, TF1 adapters), each named by
  its op and the user's line; pipebench.pipeline.rows [TF]: the one rule for rows (the label's leading dimension
  wherever batching happened); pipebench.pipeline.prefixes: which prefixes are measured, and each stage's cores;
- pipebench.measure.build [TF], shared: the one builder, a spec's stages or a walked pipeline's steps
  (pipebench.pipeline.stages.Step: `replay`) into a dataset, the original's or a rewrite's;
- vectorize [TF], rewrites [TF]: candidate rewrites (restructurings too) and their preconditions;
- content [TF], check [TF]: one epoch's examples (dense, sparse, ragged, strings) canonicalised, the original
  and each rewrite built afresh under one seed;
- pipebench.measure.rounds, shared: paired, interleaved rounds in one warm worker; buffers: large buffers and
  cache passes; subject [TF]: the function under diagnosis and its arms;
- selfcheck [TF]: a plain loop over the user's function beside the whole pipeline, in the second process;
- train [TF]: the train step and its ceiling on the original and the rewritten pipeline;
- worker [TF]: the diagnosis in a fresh process; run: the CLI side (spawn, progress, the output folder);
- report, export: diagnosis.md / diagnosis.json and the rewritten module, from the records alone.
"""
