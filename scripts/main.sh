#!/usr/bin/env bash
# Set up ./.venv and run the main job on the embedded default: synthetic Criteo-like data made on
# the spot, converted to TFRecord and packed (until `pipebench run experiments/deepfm.yaml` lands).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
out=results/demo
.venv/bin/pipebench data synth --rows 200000 --files 4 --seed 0 --out "$out/libsvm" --force
.venv/bin/pipebench convert "$out"/libsvm/part-*.libsvm --out "$out/tfrecord" --shards 4 --force
.venv/bin/pipebench convert "$out"/libsvm/part-*.libsvm --out "$out/packed" --format packed --shards 4 --force
echo "main job done: $out/{libsvm,tfrecord,packed} (each with synth.json / manifest.json)"
