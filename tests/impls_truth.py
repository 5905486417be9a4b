"""The truth of the independent-implementations corpus (tests/data/impls, README there) and the scoring of
``--auto-map`` against it.

``python -m tests.impls_truth`` prints today's measurement of every pair: item precision and recall, error rows,
the first divergence of the clean and the fault run, with and without ``-da``, or the refusal.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import msprobe_core
from msprobe_core.default_plugins.automap.automap import UNPAIRED
from msprobe_core.errors import InputError
from msprobe_core.match.data_mapping import load_data_mapping

DATA = Path(__file__).parent / "data" / "impls"
DUMPS = DATA / "dumps"
TRUTH: dict[str, Any] = json.loads((DATA / "truth.json").read_text())
LEVELS = ("mix", "L1")


def dump(pair: str, side: str, level: str) -> Path:
    """The dump.json of one side (``golden``, ``target`` or ``fault``) of a pair at a level."""
    return DUMPS / f"{TRUTH[pair][side]}_{level}" / "dump.json"


def auto_map(pair: str, side: str, level: str, out: Path, diff_analyze: bool = False) -> tuple[Any, dict[str, str]]:
    """Compare ``side`` (``target`` or ``fault``) with the golden side under ``--auto-map``: the result and the
    proposed ``{target row: golden row}`` read back from the mapping file it writes."""
    result = msprobe_core.compare(dump(pair, side, level), dump(pair, "golden", level), output_dir=out,
                                  auto_map=True, diff_analyze=diff_analyze, quiet=True)
    (mapping,) = out.glob("auto_mapping_*.yaml")
    return result, {t: g for t, g in load_data_mapping(mapping).items() if g != UNPAIRED}


def score(proposed: dict[str, str], true: dict[str, str]) -> tuple[float, float]:
    """(precision, recall): right pairs over the proposed pairs of judged target rows, and over the judged rows."""
    judged = {t: g for t, g in proposed.items() if t in true}
    hits = sum(1 for t, g in judged.items() if true[t] == g)
    return (hits / len(judged) if judged else 0.0), hits / len(true)


def names_the_fault(pair: str, level: str, node: str | None) -> bool:
    """Whether a first-divergence node is the fault's: its first divergent key, or at mix that key's module."""
    if node is None:
        return False
    want = TRUTH[pair]["levels"][level]["first_divergence"]
    if node == want:
        return True
    construct = json.loads((DUMPS / f"{TRUTH[pair]['fault']}_{level}" / "construct.json").read_text() or "{}")
    module = construct.get(want) or ""
    return node == module and module.startswith((f"Module.{TRUTH[pair]['fault_module']}.",
                                                 f"Cell.{TRUTH[pair]['fault_module']}."))


def measure(pair: str, level: str, side: str, diff_analyze: bool) -> dict[str, Any]:
    """One row of the measurement: precision, recall, error rows and first divergence, or the refusal."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            result, proposed = auto_map(pair, side, level, Path(tmp), diff_analyze)
        except InputError as exc:
            return {"refused": str(exc)}
        precision, recall = score(proposed, TRUTH[pair]["levels"][level]["rows"])
        node = (result.first_divergence or {}).get("node")
        return {"precision": precision, "recall": recall, "errors": result.summary["verdicts"].get("error", 0),
                "first_divergence": node}


def main(pairs: list[str] | None = None) -> None:
    """Print the measurement of each pair (all, or those named on the command line)."""
    for pair in pairs or TRUTH:
        for level in LEVELS:
            for side in ("target", "fault"):
                for da in (False, True):
                    m = measure(pair, level, side, da)
                    head = f"{pair:6} {level:3} {'clean' if side == 'target' else 'fault':5} {'-da' if da else '   '}"
                    if "refused" in m:
                        print(head, "REFUSED:", m["refused"][:160])
                        continue
                    verdict = ("fault named" if names_the_fault(pair, level, m["first_divergence"]) else "fault MISSED") \
                        if side == "fault" else ("clean" if m["first_divergence"] is None else "FALSE ALARM")
                    print(head, f"P={m['precision']:.3f} R={m['recall']:.3f} errors={m['errors']}",
                          f"first divergence {m['first_divergence']} ({verdict})")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
