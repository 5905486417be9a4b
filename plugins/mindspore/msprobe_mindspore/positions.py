"""``-am`` entries whose positions the dump does not have: named once, as unequal list lengths are.

An entry of ``api_mapping.yaml`` lists argument positions (``ms_args: [0, 7]``); a position the
API's rows never have (the API takes 3 arguments) maps nothing, so the entry silently does less
than it says. msprobe says nothing; here one warning per entry names the file, the API and each
missing position, with the positions the dump does have.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from .mapping import ApiMappingEntry, RowLike, Warn

log = logging.getLogger("msprobe")

#: the row states an entry maps, and the name of each side's list in the yaml file
_LISTS = (("input", "args"), ("output", "outputs"), ("parameters", "parameters"),
          ("parameters_grad", "parameters_grad"))
#: what was already said in this process (a mapper runs once per rank pair: say it once)
_SAID: set[str] = set()


def dumped_positions(rows: Iterable[RowLike], apis: set[str]) -> dict[str, dict[str, set[str]]]:
    """API (``Functional.gather``) → row state → the top-level positions its rows hold (``"0"``, a kwarg name).

    Only the APIs of ``apis`` are collected; nested items (``input.0.1``) count as their
    top-level position, every call and direction of the API together.
    """
    out: dict[str, dict[str, set[str]]] = {}
    for row in rows:
        parts = row.name.split(".", 2)
        if len(parts) < 3 or f"{parts[0]}.{parts[1]}" not in apis or not row.name.startswith(row.api):
            continue
        pattern = f".{row.state}."
        suffix = row.name[len(row.api):]
        if suffix.startswith(pattern):
            position = suffix[len(pattern):].split(".", 1)[0]
            out.setdefault(f"{parts[0]}.{parts[1]}", {}).setdefault(row.state, set()).add(position)
    return out


def _absent(listed: Sequence[int | str], have: set[str]) -> list[str]:
    return [str(p) for p in listed if str(p) not in have]


def _have(positions: set[str]) -> str:
    if not positions:
        return "none"
    return ",".join(sorted(positions, key=lambda p: (not p.isdigit(), int(p) if p.isdigit() else 0, p)))


def warn_absent_positions(path: str | Path, entries: Sequence[ApiMappingEntry], npu_rows: Sequence[RowLike],
                          bench_rows: Sequence[RowLike], warn: Warn | None = None) -> None:
    """One warning per used entry of ``path`` listing positions its API's rows do not have in the dump.

    An entry is used when the target dump has its ``ms_api`` and the golden dump its ``pt_api``
    (as :func:`~msprobe_mindspore.mapping.api_mapping_keys` decides); entries skipped for
    unequal lengths have had their warning already.
    """
    warn = warn or log.warning
    usable = [e for e in entries if e.problem is None]
    if not usable:
        return
    npu = dumped_positions(npu_rows, {e.ms_api for e in usable})
    bench = dumped_positions(bench_rows, {e.pt_api for e in usable})
    for entry in usable:
        if entry.ms_api not in npu or entry.pt_api not in bench:
            continue
        found = []
        for state, key in _LISTS:
            lists = entry.lists_for_state(state) or ((), ())
            for side, api, listed, have in (("ms", entry.ms_api, lists[0], npu[entry.ms_api].get(state, set())),
                                            ("pt", entry.pt_api, lists[1], bench[entry.pt_api].get(state, set()))):
                absent = _absent(listed, have)
                if absent:
                    dump = "target" if side == "ms" else "golden"
                    found.append(f"{side}_{key} {','.join(absent)} ({api} has {state} {_have(have)} in the "
                                 f"{dump} dump)")
        if not found:
            continue
        message = (f"{path}: {entry.ms_api} -> {entry.pt_api}: positions the dump does not have: "
                   f"{'; '.join(found)}; those items of the entry pair nothing")
        if message not in _SAID:
            _SAID.add(message)
            warn(message)
