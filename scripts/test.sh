#!/usr/bin/env bash
# Install msprobe-core, its plugins and the test extras into .venv, then lint (ruff, import contracts) and run the whole suite.
#
# Finds what the tests need by itself and says what it could not find:
#   * the shared folder (reference corpora and tools/oracle_diff.py for the differential tests):
#     $MSPROBE_SHARED, else ../shared next to this checkout (or next to the main checkout of a
#     git worktree); without it they run on the in-repository corpus (tests/data/corpus);
#   * Chromium for the HTML report's browser tests: $MSPROBE_CHROMIUM or a system chromium; where
#     none is found and apt-get can be run as root, it is installed (MSPROBE_NO_INSTALL=1 prevents it).
# pytest ends with one line per group of skipped tests and the reason (tests/fixtures.py).
set -euo pipefail
cd "$(dirname "$0")/.."

note() { echo "test.sh: $*" >&2; }

find_chromium() {
    if [ -n "${MSPROBE_CHROMIUM:-}" ] && [ -f "$MSPROBE_CHROMIUM" ]; then return 0; fi
    local name
    for name in chromium chromium-browser google-chrome google-chrome-stable; do
        command -v "$name" >/dev/null 2>&1 && return 0
    done
    return 1
}

if ! find_chromium; then
    if [ -n "${MSPROBE_NO_INSTALL:-}" ]; then
        note "no Chromium (MSPROBE_NO_INSTALL is set): the report's browser tests will skip"
    elif command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        note "installing chromium (apt-get) for the report's browser tests"
        # Playwright drives the system browser; never "playwright install" (it downloads one)
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
            || note "chromium could not be installed: the report's browser tests will skip"
    else
        note "no Chromium, and it cannot be installed here (needs root and apt-get): the report's browser" \
             "tests will skip; install chromium or set MSPROBE_CHROMIUM to a Chrome/Chromium executable"
    fi
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
plugins=()
for p in plugins/*/; do [ -f "$p/pyproject.toml" ] && plugins+=(-e "$p"); done
.venv/bin/python -m pip install --quiet -e ".[test]" "${plugins[@]}"

# where the tests look for the shared folder (the same rule as tests/fixtures.py)
shared=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "."); from tests.fixtures import shared_dir; print(shared_dir())' \
         2>/dev/null || echo "${MSPROBE_SHARED:-../shared}")
if [ -d "$shared/corpora" ] && [ -f "$shared/tools/oracle_diff.py" ]; then
    note "shared folder: $shared"
else
    note "no shared folder at $shared (corpora/ and tools/oracle_diff.py): the differential tests against" \
         "msprobe's outputs run on the in-repository corpus (tests/data/corpus) only; set MSPROBE_SHARED to the folder for all"
fi

.venv/bin/ruff check .
# the core's layering and no import cycle (the contracts in pyproject.toml, docs/architecture.md "Layers")
.venv/bin/lint-imports --no-cache --no-logo
# -q unless the arguments set the verbosity themselves (a second -q would hide the final counts)
verbosity=(-q)
for arg in "$@"; do
    case "$arg" in -q|--quiet|-v|--verbose|-qq|-vv) verbosity=() ;; esac
done
.venv/bin/python -m pytest ${verbosity[@]+"${verbosity[@]}"} "$@"
