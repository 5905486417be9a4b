#!/usr/bin/env python3
"""Start-up, side by side: ``msprobe --help``, ``msprobe compare --help`` and a small statistics compare.

Issue 33 ("plugins only where they serve") cut what a run imports before it works; on a small dump the start-up
is a large share of the wall time. This script times several msprobe commands (each a command prefix, e.g.
``/work/main/.venv/bin/python -m msprobe_core`` for the build before a change, ``.venv/bin/python -m msprobe_core``
for this checkout, ``/work/venvs/msp-26.2.0/bin/msprobe`` for msprobe 26.2.0) on the same inputs, alternating
them run by run, and prints the median wall time of each and the ratios to the first one named. For each
``--help`` it also prints how many modules a fresh process imported and whether numpy was among them (the
command is run under ``-X importtime``, which only a ``python -m`` prefix takes).

A command may start with ``VAR=VALUE`` settings for it alone: ``PYTHONPATH=BASE:BASE/plugins/pytorch:…`` runs
another checkout's sources (``git worktree add BASE COMMIT``, its compiled ``msprobe_core/*.so`` copied in) with
this venv, so both builds are timed with the same interpreter and libraries.

The statistics pair (``--entries`` API entries per side, one rank) is made once with :mod:`dumpgen` under
``--workdir``. Figures only: nothing here asserts a speed.

Example::

    python benchmarks/startup.py --entries 30000 --repeat 5 \\
        --cmd before='/work/main/.venv/bin/python -m msprobe_core' \\
        --cmd after='.venv/bin/python -m msprobe_core' \\
        --cmd msprobe-26.2.0=/work/venvs/msp-26.2.0/bin/msprobe
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _named_command(text: str) -> tuple[str, list[str], dict[str, str]]:
    """``NAME=COMMAND``: the name, the command prefix and the variables set before it (``VAR=VALUE`` tokens)."""
    name, sep, command = text.partition("=")
    tokens = shlex.split(command)
    env: dict[str, str] = {}
    while tokens and re.match(r"^[A-Z_][A-Z0-9_]*=", tokens[0]):
        key, _, value = tokens.pop(0).partition("=")
        env[key] = value
    if not sep or not name or not tokens:
        raise argparse.ArgumentTypeError(f"--cmd takes NAME=[VAR=VALUE ...] COMMAND, not {text!r}")
    return name, tokens, env


def _pair(workdir: Path, entries: int, seed: int) -> tuple[Path, Path]:
    """The statistics pair's step directories (made once; ``manifest.json`` is written last by :mod:`dumpgen`)."""
    root = workdir / f"startup-statistics-{entries}-seed{seed}"
    if not (root / "manifest.json").is_file():
        import dumpgen

        shutil.rmtree(root, ignore_errors=True)
        dumpgen.generate("statistics", root, entries=entries, seed=seed)
    return root / "target" / "step0", root / "golden" / "step0"


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600)
    return time.perf_counter() - started, proc


def _imports(prefix: list[str], args: list[str], env: dict[str, str]) -> str:
    """How many modules a fresh ``prefix ARGS`` imports and whether numpy is one (``python -m`` prefixes only)."""
    if len(prefix) < 3 or prefix[1] != "-m":
        return "-"
    proc = subprocess.run([prefix[0], "-X", "importtime", *prefix[1:], *args], capture_output=True, text=True,
                          env=env, timeout=600)
    names = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    names = [n for n in names if n and n != "imported package"]
    return f"{len(names)} modules, numpy {'yes' if 'numpy' in names else 'no'}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cmd", type=_named_command, action="append", required=True, metavar="NAME=COMMAND",
                   help="an msprobe command prefix to time (repeatable; the first is the base of the ratios)")
    p.add_argument("--entries", type=int, default=30_000, help="API entries of the statistics pair (default 30000)")
    p.add_argument("--repeat", type=int, default=5, help="runs of each command, alternating (default 5)")
    p.add_argument("--workdir", type=Path, default=Path(os.environ.get("MSPROBE_BENCH_DIR", "/tmp/msprobe-bench")))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    env = dict(os.environ)
    target, golden = _pair(args.workdir, args.entries, args.seed)
    cases = {
        "msprobe --help": ["--help"],
        "msprobe compare --help": ["compare", "--help"],
        f"compare, statistics, {args.entries:,} entries": ["compare", "-tp", str(target), "-gp", str(golden)],
    }
    print(f"statistics pair: {target} / {golden}")
    for case, case_args in cases.items():
        times: dict[str, list[float]] = {name: [] for name, _, _ in args.cmd}
        for _ in range(args.repeat):
            for name, prefix, own in args.cmd:
                with tempfile.TemporaryDirectory(prefix="msprobe-startup-") as out:
                    extra = ["-o", out] if case_args[0] == "compare" and "--help" not in case_args else []
                    seconds, proc = _timed([*prefix, *case_args, *extra], {**env, **own})
                if proc.returncode != 0:
                    print(f"{name}: {case} failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
                    return 1
                times[name].append(seconds)
        base = statistics.median(times[args.cmd[0][0]])
        print(f"\n{case} (median of {args.repeat}):")
        for name, prefix, own in args.cmd:
            median = statistics.median(times[name])
            imports = _imports(prefix, case_args, {**env, **own}) if "--help" in case_args else ""
            print(f"  {name:<16} {median:8.3f} s   x{median / base:6.2f} of {args.cmd[0][0]}"
                  + (f"   [{imports}]" if imports else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
