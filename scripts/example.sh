#!/usr/bin/env bash
# Create .venv, install msprobe-core with the PyTorch plugin, and compare the bundled example pair.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet -e . -e plugins/pytorch
.venv/bin/msprobe compare -tp examples/pytorch_tensor/target/step0 -gp examples/pytorch_tensor/golden/step0 -o output/example
