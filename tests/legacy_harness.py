"""Replaying the commands of the legacy (msprobe 8.3.3) oracles with msprobe-core's classic interface."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

TIMESTAMP = re.compile(r"_\d{14}")
#: every sentence the highlighter can append to Err_message (8.3.3 §7.2), for comparing
#: our always-highlighted output with oracles run without -hl
HIGHLIGHT_MESSAGES = (
    "maximum or minimum is nan, -inf, or inf",
    "maximum absolute error exceeds 1e+10",
    "maximum absolute error of both input/parameters and output exceed 1, with the output larger by an order of magnitude",
    "The input/parameter's one thousandth err ratio exceeds 0.9, while the output's is below 0.6",
    "The output's one thousandth err ratio decreases by more than 0.1 compared to the input/parameter's",
    "The output's cosine decreases by more than 0.1 compared to the input/parameter's",
    "maximum relative error exceeds 0.5",
    "The output's maximum relative error exceeds 0.1, while the input/parameter's is below 0.01",
    "requires_grad is inconsistent",
)
STRIP_HIGHLIGHT = "(\\n)?(" + "|".join(re.escape(m) for m in HIGHLIGHT_MESSAGES) + ")"


def strip_ts(name: str) -> str:
    """A result file name without its 14-digit timestamp."""
    return TIMESTAMP.sub("", name)


def outputs(folder: Path) -> dict[str, Path]:
    """Result workbooks and advisor files of a folder, by name without timestamp."""
    found = {}
    for p in folder.iterdir():
        if p.suffix in (".xlsx", ".txt") and (p.name.startswith(("compare_result", "debug_compare_result", "advisor"))):
            found[strip_ts(p.name)] = p
    return found


def cli_args(cmd: str, out: Path, extra: tuple[str, ...] = ()) -> list[str] | None:
    """The argv (without ``msprobe``) of a CLI oracle command, with ``-o`` pointed at ``out``."""
    tokens = shlex.split(cmd)
    tokens = [t for t in tokens if not re.match(r"^[A-Z_]+=", t)]
    if not tokens or tokens[0] != "msprobe":
        return None
    args = tokens[1:]
    if "-o" in args:
        args[args.index("-o") + 1] = str(out)
    return args + list(extra)


def api_source(cmd: str, oracle_rel: str, out: Path) -> str | None:
    """The Python source of an API oracle command, importing msprobe_classic and writing to ``out``."""
    tokens = shlex.split(cmd)
    if len(tokens) < 3 or tokens[0] != "python" or tokens[1] != "-c":
        return None
    src = tokens[2]
    src = src.replace("from msprobe.pytorch import", "from msprobe_classic import")
    src = src.replace("from msprobe.mindspore import", "from msprobe_classic import")
    return src.replace(repr(oracle_rel), repr(str(out)))


def advisor_lines(path: Path) -> list[str]:
    """The three lines of an advisor file."""
    return path.read_text(encoding="utf-8").splitlines()
