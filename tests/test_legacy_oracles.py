"""Differential tests of the classic interface against every msprobe 8.3.3 oracle in corpora/legacy.

Each variant's ``cmd.txt`` is replayed (``msprobe …`` through ``msprobe_core.cli.main``,
``python -c "from msprobe.pytorch import …"`` through ``msprobe_core.legacy``) from the corpora
folder, with the output directory redirected. Workbooks must agree on every row and every
fill (oracle_diff), advisor files line for line.

Our classic interface highlights by default; oracles run without ``-hl`` therefore also have
their own ``-nhl`` (no highlight) replay, which must agree exactly, while the default replay
must agree once the highlight sentences are removed from ``Err_message``.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from pathlib import Path

import pytest

from msprobe_core.cli import main

from .conftest import agree, corpora_dir
from .legacy_harness import STRIP_HIGHLIGHT, advisor_lines, api_source, cli_args, outputs

#: 8.3.3's -f relabels the columns of statistics/md5 results (bench columns shifted, md5 lost):
#: its output is garbage. Ours fuzzy-matches for real; on these cases every row finds its exact
#: partner, so the result equals the oracle of the same case without -f (docs/differences.md).
BROKEN_FUZZY = {"legacy/c01/f_hl": "legacy/c01/hl", "legacy/c03/f_hl": "legacy/c03/hl"}
#: 8.3.3 crashes here (-f in statistics mode with unmatched rows); ours must not
CRASHED = {"legacy/c08/f_hl", "legacy/c08/s_f_hl"}


def _mindspore_ready() -> str | None:
    try:
        import msprobe_mindspore.plugin  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import problem means not ready
        return f"MindSpore plugin not importable yet ({exc})"
    return None


def _variants():
    root = corpora_dir() / "legacy"
    if not root.is_dir():
        return []
    found = []
    for d in sorted(root.glob("*/*")):
        if (d / "cmd.txt").is_file():
            rel = str(d.relative_to(corpora_dir()))
            marks = []
            if d.parent.name.startswith(("ms_", "x_")):
                reason = _mindspore_ready()
                if reason:
                    marks.append(pytest.mark.skip(reason=reason))
            found.append(pytest.param(rel, id=rel.removeprefix("legacy/"), marks=marks))
    return found


def _run(rel: str, out: Path, no_highlight: bool = False) -> int:
    cmd = (corpora_dir() / rel / "cmd.txt").read_text(encoding="utf-8").strip()
    args = cli_args(cmd, out, ("-nhl",) if no_highlight else ())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        if args is not None:
            return main(args)
        source = api_source(cmd, rel, out)
        assert source is not None, f"cannot replay {cmd}"
        if no_highlight:
            source = re.sub(r"\)\s*$", ", highlight=False)", source.replace(", highlight=True", ""))
        exec(compile(source, "<oracle api call>", "exec"), {})
        return 0


def _ran_with_highlight(rel: str) -> bool:
    cmd = (corpora_dir() / rel / "cmd.txt").read_text(encoding="utf-8")
    return " -hl" in cmd or "highlight=True" in cmd


def _check(oracle_diff, ours: dict[str, Path], ref_dir: Path, strip: bool) -> None:
    refs = outputs(ref_dir)
    assert refs, f"{ref_dir} has no outputs"
    assert sorted(ours) == sorted(refs)
    for name, ref in refs.items():
        if name.endswith(".txt"):
            assert advisor_lines(ours[name]) == advisor_lines(ref), f"{name} differs"
            continue
        extra = ("--strip", STRIP_HIGHLIGHT) if strip else ()
        code, report = agree(oracle_diff, ours[name], ref, extra=extra)
        assert code == 0, f"{ref_dir.name}/{name} disagrees:\n{report}"


@pytest.mark.parametrize("rel", _variants())
def test_classic_agrees_with_msprobe_833(corpora, oracle_diff, tmp_path, monkeypatch, rel):
    monkeypatch.chdir(corpora)
    out = tmp_path / "default"
    out.mkdir()
    assert _run(rel, out) == 0
    ours = outputs(out)
    if rel in CRASHED:
        _check_fuzzy_survives(ours)
        return
    ref_dir = corpora / BROKEN_FUZZY.get(rel, rel)
    highlighted = _ran_with_highlight(rel)
    _check(oracle_diff, ours, ref_dir, strip=not highlighted)
    if not highlighted:
        plain = tmp_path / "no_highlight"
        plain.mkdir()
        assert _run(rel, plain, no_highlight=True) == 0
        _check(oracle_diff, outputs(plain), ref_dir, strip=False)


def _check_fuzzy_survives(ours: dict[str, Path]) -> None:
    """c08: one extra ``x + 0.0`` shifts every later add; fuzzy pairs each with its true partner."""
    import openpyxl

    assert "compare_result.xlsx" in ours and "advisor.txt" in ours
    ws = openpyxl.load_workbook(ours["compare_result.xlsx"]).worksheets[0]
    rows = list(ws.iter_rows(values_only=True))
    head = rows[0]
    bench, result = head.index("Bench Name"), head.index("Result")
    diffs = [head.index(c) for c in ("Max diff", "Min diff", "Mean diff", "L2norm diff")]
    unmatched = [r for r in rows[1:] if r[bench] == "N/A"]
    assert 0 < len(unmatched) <= 6
    assert all(r[0].startswith("Tensor.__add__.") for r in unmatched)
    for r in rows[1:]:
        if r[bench] == "N/A":
            continue
        assert r[result] != "Warning", r[0]
        for k in diffs:
            v = r[k]
            assert v in ("N/A", "Nan", None) or (isinstance(v, (int, float)) and (v == 0 or math.isnan(v))), (r[0], v)
