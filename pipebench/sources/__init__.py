"""Where a pipeline's records come from: file, FastFile and Pipe modes, and the local Pipe-mode emulator.

- file: local files; `sources.file.cold` evicts each file from the page cache as it opens.
- fastfile: local files behind an EMULATED remote link (first-read latency per file, shared
  bandwidth cap: `fastfile.FetchLink`), or read as they are on SageMaker (`emulate: false`).
- pipe: SageMaker's PipeModeDataset op reading FIFOs, fed locally by `pipe_emulator.PipeEmulator`
  (the real op runs unchanged; it exists only for TF 2.14 on Python 3.9/3.10).

Only `readers` imports TensorFlow.
"""
