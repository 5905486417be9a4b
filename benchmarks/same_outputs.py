#!/usr/bin/env python3
"""Whether two builds of msprobe write the same files on every corpus case: a refactor's acceptance check.

Runs every ``cmd.txt`` of ``../shared/corpora`` (the oracle commands: ``msprobe compare``, ``msprobe -f …
compare``, ``msprobe merge_result``) with ``--ours`` and with ``--base`` into two fresh directories, the
command's ``-o`` replaced, and, for ``msprobe compare``, ``--json-summary`` added. Every file written is
compared byte for byte (``cmp``), names taken without their 14-digit timestamps; an xlsx workbook whose bytes
differ is compared cell by cell with fills (``tools/oracle_diff.py``); the JSON summaries are compared without
what differs between any two runs (times, the output paths). Prints one line per command that differs and the
totals; exit 1 when any differs::

    benchmarks/same_outputs.py --ours .venv/bin/msprobe --base /work/wt-base/.venv/bin/msprobe \\
        --corpora ../shared/corpora --workdir /tmp/same [--env MSPROBE_STREAM_MIN_BYTES=0]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

STAMP = re.compile(r"_?\d{14}(?:\d+)?")
#: summary keys whose values differ between any two runs of one build
VOLATILE = {"elapsed_s", "started", "finished", "duration_s", "wall_s", "output_dir", "files", "result_files",
            "timestamp", "report", "path", "written", "next_dump_config"}


def commands(corpora: Path) -> list[tuple[Path, list[str], str]]:
    """(directory to run in, argv after ``msprobe``, label) of every oracle command."""
    found = []
    for cmd in sorted(corpora.glob("*/*/oracle/*/cmd.txt")) + sorted(corpora.glob("legacy/*/*/cmd.txt")):
        line = next((x for x in cmd.read_text().splitlines() if "msprobe " in x and not x.startswith("#")), None)
        if line is None:
            continue
        argv = shlex.split(line)
        while argv and "=" in argv[0]:
            argv.pop(0)  # an environment prefix
        if not argv or argv[0] != "msprobe":
            continue
        legacy = cmd.parts[-3] == "legacy" or "legacy" in cmd.relative_to(corpora).parts[:1]
        where = corpora if legacy else cmd.parent.parent.parent
        found.append((where, argv[1:], str(cmd.parent.relative_to(corpora))))
    return found


#: added to every ``msprobe compare`` command (``--compare-arg=--report --compare-arg=html``: the HTML report too)
COMPARE_ARGS: list[str] = []


def with_output(argv: list[str], out: Path, summary: Path | None) -> list[str]:
    args = list(argv)
    for flag in ("-o", "--output_path", "--output-path"):
        if flag in args:
            args[args.index(flag) + 1] = str(out)
            break
    else:
        args += ["-o", str(out)]
    if summary is not None and args[:1] == ["compare"]:
        args += ["--json-summary", str(summary), *COMPARE_ARGS]
    return args


def outputs(directory: Path) -> dict[str, Path]:
    return {STAMP.sub("", str(p.relative_to(directory))): p for p in sorted(directory.rglob("*")) if p.is_file()}


def steady(value):
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [steady(v) for v in value]
    if isinstance(value, str):
        return STAMP.sub("", value)
    return value


def run(tool: str, where: Path, argv: list[str], out: Path, summary: Path | None, env: dict[str, str]) -> int:
    out.mkdir(parents=True)
    done = subprocess.run([tool, *with_output(argv, out, summary)], cwd=where, capture_output=True, text=True,
                          env={"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python", "PATH": "/usr/bin:/bin", **env})
    return done.returncode


def _steady_text(path: Path, out: Path) -> str:
    """A text file's content without what differs between any two runs: its output directory, timestamps."""
    text = path.read_text(encoding="utf-8", errors="replace").replace(str(out), "<out>")
    text = re.sub(r"\d{14}\d*", "<stamp>", text)
    text = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d", "<time>", text)
    return re.sub(r'"(?:elapsed_s|duration_s|wall_s|seconds)": ?[-+0-9.e]+', '"<seconds>"', text)


def differences(a: Path, b: Path, oracle_diff: Path) -> list[str]:
    fa, fb = outputs(a), outputs(b)
    said = [f"only in one: {n}" for n in sorted(set(fa) ^ set(fb))]
    for name in sorted(set(fa) & set(fb)):
        if filecmp.cmp(fa[name], fb[name], shallow=False):
            continue
        if name.endswith((".html", ".json", ".txt")) and _steady_text(fa[name], a) == _steady_text(fb[name], b):
            continue  # the same but for the run's own output paths and timestamps, which a page or a summary names
        if name.endswith(".xlsx"):
            same = subprocess.run([sys.executable, str(oracle_diff), str(fa[name]), str(fb[name])],
                                  capture_output=True).returncode == 0
            if same:
                continue
        said.append(f"differs: {name}")
    return said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ours", required=True)
    parser.add_argument("--base", required=True)
    parser.add_argument("--corpora", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="set for both builds (MSPROBE_STREAM_MIN_BYTES=0: every pair chunk by chunk)")
    parser.add_argument("--compare-arg", action="append", default=[], help="added to every msprobe compare")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    COMPARE_ARGS.extend(args.compare_arg)
    oracle_diff = args.corpora.parent / "tools" / "oracle_diff.py"
    shutil.rmtree(args.workdir, ignore_errors=True)
    cases = commands(args.corpora)
    bad = files = 0
    for n, (where, argv, label) in enumerate(cases):
        root = args.workdir / f"{n:03d}"
        codes = [run(tool, where, argv, root / side, root / f"{side}.summary.json", env)
                 for tool, side in ((args.ours, "ours"), (args.base, "base"))]
        said = [] if codes[0] == codes[1] else [f"exit {codes[0]} vs {codes[1]}"]
        said += differences(root / "ours", root / "base", oracle_diff)
        files += len(outputs(root / "ours"))
        sums = [root / f"{side}.summary.json" for side in ("ours", "base")]
        if all(p.is_file() for p in sums):
            if steady(json.loads(sums[0].read_text())) != steady(json.loads(sums[1].read_text())):
                said.append("the JSON summaries differ")
        elif any(p.is_file() for p in sums):
            said.append("a JSON summary from one build only")
        if said:
            bad += 1
            print(f"{label} ({' '.join(argv[:1])}): " + "; ".join(said))
    print(f"{len(cases)} commands, {files} files written by ours: {len(cases) - bad} the same, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
