#!/usr/bin/env bash
# The GPU check of issue 47: a Qwen2.5-VL-3B-shaped model with random weights in bfloat16,
# built offline, run through clearsight (batch_size: auto) and through the naive per-item loop;
# prints items per second of both, the GPU's busy share and auto's batch size
# (benchmarks/gpu_check.py says what each line means). A few minutes on one GPU, no network.
# Without a CUDA GPU: one line, exit status 77 (skipped). Arguments go to gpu_check.py
# (--scenes, --model-dir). Python: $PYTHON, else the checkout's .venv, else python3.
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-.venv/bin/python}"
[ -x "$py" ] || py=python3
export PYTHONPATH="$PWD/src:$PWD/tests${PYTHONPATH:+:$PYTHONPATH}"
exec "$py" benchmarks/gpu_check.py "$@"
