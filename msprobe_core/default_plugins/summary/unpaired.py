"""Rows that found no counterpart: how many on each side, which kinds, the likely cause and what to try.

A compare whose rows mostly stayed unpaired has almost nothing judged: every verdict it shows is a ``pass``
of a row with no golden data, and "no first divergence" means nothing. The summary says so before anything
else (:func:`unpaired_lines`), ``--json-summary`` carries it under ``unpaired`` and ``--fail-on`` fails when
less than :data:`MIN_MATCHED` of the target's rows were compared (``--min-matched`` sets the share).

The target side is counted from the result rows themselves (a row whose ``Bench Name`` is ``N/A``), so it is
known wherever a result is read, result files included. The golden side is known only to the match stage (a
result table lists the target's rows): it travels in each result's summary partial from the match's account
(:attr:`~msprobe_core.model.MatchNotes.pairing`), and is ``None`` where no match ran (``msprobe report``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

__all__ = ["MIN_MATCHED", "parse_share", "row_kind", "unpaired_view", "unpaired_lines", "gate_shortfall"]


def parse_share(value: Any) -> float:
    """A share given as ``0.5``, ``50%`` or ``50`` (a number over 1 is a percentage), between 0 and 1."""
    text = str(value).strip()
    percent = text.endswith("%")
    try:
        number = float(text.rstrip("%").strip())
    except ValueError:
        raise ValueError(f"not a share: {value!r} (give 0.5 or 50%)") from None
    if percent or number > 1:
        number /= 100
    if not 0 <= number <= 1:
        raise ValueError(f"not a share between 0 and 100%: {value!r}")
    return number


#: The least share of a side's rows that must have found a counterpart before a run counts as compared. Every
#: same-program pair of the reference corpora pairs at least 80 % of its target rows and 99 % of its golden rows
#: (a precision change adds cast calls on one side: 80 % for a fp16-vs-fp32 kernel dump, 93 % for a MindSpore
#: fp16 L1 dump); a renamed model without ``--auto-map`` pairs none, a cross-framework pair without a mapping 3 %.
#: Half sits well between the two, and still lets a mapped cross-framework pair through (52 % with ``-cm``'s
#: built-in table, 69 % with ``-am``'s, whose compared rows are meaningful). See docs/differences.md.
MIN_MATCHED = 0.5


_MODULE_CALL = re.compile(r"\.(?:forward|backward)\.\d+(?:\.|$)")
_API_CALL = re.compile(r"\.\d+\.(?:forward|backward)(?:\.|$)")

#: the kinds :func:`row_kind` gives, in the order the summary lists them, with how it names them
KIND_NAMES = {"module": "module rows", "api": "API rows", "backward": "backward rows", "other": "other rows"}


def row_kind(name: str) -> str:
    """``backward`` (a backward call's row, a parameter's gradient), ``module`` (a forward module/cell call's row:
    ``<prefix>.forward.<n>.…``), ``api`` (a forward API call's row: ``<prefix>.<n>.forward.…``) or ``other``."""
    if ".backward" in name or ".parameters_grad" in name:
        return "backward"
    if _MODULE_CALL.search(name):
        return "module"
    if _API_CALL.search(name):
        return "api"
    return "other"


def _side(rows: int, unmatched: int) -> dict[str, Any]:
    return {"rows": rows, "matched": rows - unmatched, "unmatched": unmatched,
            "matched_share": round((rows - unmatched) / rows, 6) if rows else None}


def _percent(share: float) -> str:
    return f"{share * 100:.3g}%"


def _command(inputs: tuple[str, str] | None, option: str) -> str:
    target, golden = inputs if inputs else ("TARGET", "GOLDEN")
    quote = shlex.quote if inputs else str
    return f"msprobe compare -tp {quote(target)} -gp {quote(golden)} {option}"


def _mapping_options(framework: str) -> tuple[tuple[str, str], ...]:
    """The options that pair ``framework``'s names with another framework's, as its plugin answers
    (``msprobe_mapping_options``); none without a run's host or an answer."""
    from msprobe_core.plugin import run_host

    host = run_host()
    return (host.pm.hook.msprobe_mapping_options(framework=framework) if host is not None else None) or ()


def _cause(kinds: dict[str, int], frameworks: Sequence[dict[str, str]],
           inputs: tuple[str, str] | None) -> tuple[str, list[str]]:
    """(the likely cause, the commands to try) of a run whose rows mostly found no counterpart."""
    modules, apis = kinds.get("module", 0), kinds.get("api", 0)
    crossed = [f for f in frameworks if f.get("target") and f.get("golden") and f["target"] != f["golden"]]
    if crossed:
        f = crossed[0]
        options = _mapping_options(f["target"]) or _mapping_options(f["golden"])
        wanted = [flag for flag, what in options if (what == "module" and modules) or (what == "api" and apis)]
        wanted.sort(key=lambda flag: -(modules if dict(options)[flag] == "module" else apis))
        cause = (f"the two dumps come from different frameworks ({f['target']} vs {f['golden']}), whose names pair "
                 "only through a mapping")
        return cause, [_command(inputs, flag) for flag in wanted] + [_command(inputs, "--auto-map")]
    if modules >= apis:
        cause = ("the module names differ between the two dumps (a renamed or rewrapped model), or the dumps are "
                 "not of the same model")
        return cause, [_command(inputs, "--auto-map")]
    cause = ("the API calls differ between the two dumps (other call numbers, other APIs: a changed program), or "
             "the dumps are not of the same model")
    return cause, [_command(inputs, "-fm"), _command(inputs, "--auto-map")]


def unpaired_view(partials: Sequence[Any], frameworks: Sequence[dict[str, str]],
                  inputs: tuple[str, str] | None, min_matched: float | None) -> dict[str, Any]:
    """The summary's ``unpaired`` entry from the run's partials (:class:`~msprobe_core.default_plugins.summary.accumulate.ViewPartial`).

    ``target``/``golden``: rows, matched, unmatched and the matched share of each side (``golden`` is ``None``
    when some result's golden side is not known); ``kinds``: the unmatched target rows by :func:`row_kind`;
    ``below``: whether a side's matched share is under ``min_matched`` (then ``cause`` and ``try`` say why it
    likely happened and which commands to run instead; else both are ``None``).
    """
    share = MIN_MATCHED if min_matched is None else min_matched
    rows = sum(p.rows for p in partials)
    unmatched = sum(p.unmatched for p in partials)
    kinds: dict[str, int] = {}
    for p in partials:
        for kind, n in p.unmatched_kinds.items():
            kinds[kind] = kinds.get(kind, 0) + n
    kinds = {k: kinds[k] for k in KIND_NAMES if kinds.get(k)}
    known = bool(partials) and all(p.golden_rows is not None for p in partials)
    golden = _side(sum(p.golden_rows for p in partials), sum(p.golden_unmatched for p in partials)) if known else None
    target = _side(rows, unmatched)
    below = [side for side, s in (("target", target), ("golden", golden))
             if s is not None and s["rows"] and s["matched_share"] < share]
    cause, commands = _cause(kinds, frameworks, inputs) if below else (None, [])
    return {"min_matched": share, "target": target, "golden": golden, "kinds": kinds, "below": below,
            "cause": cause, "try": commands}


def unpaired_lines(summary: dict[str, Any]) -> list[str]:
    """The console lines that open the summary of a run whose rows mostly found no counterpart (else none)."""
    u = summary.get("unpaired")
    if not u or not u["below"]:
        return []
    sides = []
    for side in ("target", "golden"):
        s = u[side]
        if s is not None and s["rows"]:
            sides.append(f"{s['unmatched']} of {s['rows']} {side} rows ({_percent(s['unmatched'] / s['rows'])})")
    lines = [f"  NOT COMPARED: {' and '.join(sides)} found no counterpart; less than "
             f"{_percent(u['min_matched'])} of the {' and '.join(u['below'])} rows were compared, so the verdicts "
             "below say little"]
    if u["kinds"]:
        lines.append("    unpaired target rows: " + ", ".join(f"{n} {KIND_NAMES[k]}" for k, n in u["kinds"].items()))
    lines.append(f"    likely cause: {u['cause']}")
    lines.extend(f"    try: {c}" for c in u["try"])
    return lines


def gate_shortfall(summary: dict[str, Any]) -> str | None:
    """Why the ``--fail-on`` gate fails on what was compared: less than the least share of the target's rows
    found a counterpart (``None``: enough were compared)."""
    u = summary.get("unpaired")
    if not u:
        return None
    t = u["target"]
    if not t["rows"] or t["matched_share"] >= u["min_matched"]:
        return None
    return (f"only {t['matched']} of {t['rows']} target rows ({_percent(t['matched_share'])}) found a golden "
            f"counterpart, less than --min-matched {_percent(u['min_matched'])}")
