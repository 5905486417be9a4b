#!/usr/bin/env bash
# Install msprobe-core, its plugins and the test extras into .venv, then lint and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
plugins=()
for p in plugins/*/; do [ -f "$p/pyproject.toml" ] && plugins+=(-e "$p"); done
.venv/bin/python -m pip install --quiet -e ".[test]" "${plugins[@]}"
.venv/bin/ruff check .
.venv/bin/python -m pytest -q "$@"
