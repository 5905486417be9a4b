"""The next, narrower dump: a ``config.json`` for msprobe's own dumper that re-dumps the first divergence.

After a compare finds where two runs part, the engineer's next step is a tensor-mode dump of just that region
(the divergent call, or the module around it) at the step and rank where it happened. This module writes that
config beside the results, in the format msprobe 26.x's ``PrecisionDebugger(config_path=...)`` reads:

* the divergence sits inside a module the dump recorded (``construct.json`` gave its path), or is a module itself:
  level ``mix``, ``tensor.list`` = that module's name up to its class and a dot (``Module.blocks.1.attn.Attention.``)
  and, for an API call, the call's own entry (below). At ``mix`` level msprobe's dumper turns a list entry found in
  a module's name on for every call made inside that module, and its entries match by substring, so the module's
  forward and backward rows and every API it calls are dumped. (``tensor.scope`` is a range from a start call to an
  end call; the same module at both ends closes the range in the module's own pre-hook, so a dump made with it
  holds the module's row alone: seen with msprobe 26.2.0's dumper, ``tests/test_next_dump.py``.)
* otherwise (an API-level dump): level ``L1``, ``tensor.list`` = the call's name up to its number and a dot
  (``Tensor.__mul__.1.``): the trailing dot keeps ``Tensor.__mul__.1`` from matching ``Tensor.__mul__.10`` while
  taking the call's forward and backward;
* ``step`` and ``rank`` from the dump's directories (``step<N>/rank<R>/dump.json``); ``rank`` only where the run
  compared more than one rank: msprobe requires ``rank: []`` of a single-card run.

Module and API calls are told apart by msprobe's naming grammar alone (a module's call ends with
``.forward.<n>``/``.backward.<n>``, an API's with ``.<n>.forward``/``.<n>.backward``): no framework is named here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: The file name's stem; the run's stamp follows it (``next_dump_config_<stamp>.json``).
STEM = "next_dump_config"
#: Where the re-run writes its dump, relative to the training script's working directory.
DUMP_PATH = "./msprobe_next_dump"

_MODULE_CALL = re.compile(r"^(?P<head>.+)\.(?:forward|backward)\.(?P<n>\d+)$")
_API_CALL = re.compile(r"^(?P<head>.+\.\d+)\.(?:forward|backward)$")
_STEP_DIR = re.compile(r"step(\d+)")
_RANK_DIR = re.compile(r"rank(\d*)")
_DUMP_FILES = ("dump.json",)


def is_module_call(name: str) -> bool:
    """Whether a dump node names a module's (or cell's) call rather than an API's."""
    return bool(_MODULE_CALL.match(name)) and not _API_CALL.match(name)


def step_and_rank(dump_file: Path) -> tuple[list[int], list[int]]:
    """The step and rank a ``…/step<N>/rank<R>/dump.json`` was written for (``[]`` where the path does not say)."""
    rank_dir, step_dir = dump_file.parent.name, dump_file.parent.parent.name
    rank: list[int] = []
    m = _RANK_DIR.fullmatch(rank_dir)
    if m and m.group(1):
        rank = [int(m.group(1))]
    s = _STEP_DIR.fullmatch(step_dir)
    return ([int(s.group(1))] if s else []), rank


def _entry(call: str) -> str:
    """A list entry matching a call's forward and backward rows and nothing else (msprobe matches by substring)."""
    m = _API_CALL.match(call)
    if m:
        return f"{m.group('head')}."
    m = _MODULE_CALL.match(call)
    return f"{m.group('head')}." if m else call


def region(first: Mapping[str, Any]) -> tuple[str, list[str]]:
    """What to re-dump for a first divergence: the dump level and the ``tensor.list`` entries."""
    node = str(first["node"])
    if is_module_call(node):
        return "mix", [_entry(node)]
    path = first.get("path") or ()
    if first.get("path_source") == "construct.json":
        modules = [p for p in path[:-1] if isinstance(p, str) and is_module_call(p)]
        if modules:
            return "mix", [_entry(modules[-1]), _entry(node)]
    return "L1", [_entry(node)]


def next_dump_config(first: Mapping[str, Any], dump_file: Path, *, ranks: int = 1) -> dict[str, Any]:
    """The dumper config re-dumping ``first`` (a summary's first divergence) of the run that wrote ``dump_file``
    (``ranks``: how many ranks the run compared; one is a single-card run, ``rank: []``)."""
    level, names = region(first)
    step, rank = step_and_rank(dump_file)
    if ranks < 2:
        rank = []
    tensor: dict[str, Any] = {"scope": [], "list": names, "data_mode": ["all"]}
    return {"task": "tensor", "dump_path": DUMP_PATH, "rank": rank, "step": step, "level": level,
            "async_dump": False, "tensor": tensor}


def dump_of(first: Mapping[str, Any], dumps: Mapping[str, Path]) -> Path | None:
    """The target dump the first divergence was found in (``dumps``: each result's label → its target file)."""
    label = str(first.get("rank") or "")
    found = dumps.get(label)
    if found is None and len(dumps) == 1:
        found = next(iter(dumps.values()))
    if found is None or found.name not in _DUMP_FILES:
        return None  # not a dump.json (a kernel dump, debug save): msprobe's tensor-mode config does not apply
    return found


def write_next_dump_config(summary: dict[str, Any], dumps: Mapping[str, Path], output_dir: Path,
                           stamp: str) -> Path | None:
    """Write ``next_dump_config_<stamp>.json`` for the summary's first divergence and note it in the summary.

    Adds ``next_dump_config`` (the file's path) and ``next_dump`` (level, region, step, rank and the framework
    whose dumper reads it) to ``summary``; nothing is written when nothing diverged or the dump is not a
    ``dump.json``. A file that cannot be written is a warning, never the run's failure: the results are there.
    """
    import logging

    from msprobe_core.plugin import TEXT_ERRORS, atomic_path

    first = summary.get("first_divergence")
    if not first:
        return None
    dump_file = dump_of(first, dumps)
    if dump_file is None:
        return None
    config = next_dump_config(first, dump_file, ranks=len({p.parent.name for p in dumps.values()}))
    path = Path(output_dir) / f"{STEM}_{stamp}.json"
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8",
                           errors=TEXT_ERRORS)
    except OSError as exc:
        logging.getLogger("msprobe").warning("The next dump's config %s could not be written (%s).", path,
                                             exc.strerror or exc)
        return None
    summary["next_dump_config"] = str(path.resolve())
    summary["next_dump"] = {
        "level": config["level"],
        "list": config["tensor"]["list"],
        "step": config["step"],
        "rank": config["rank"],
        "framework": target_framework(summary),
    }
    summary.setdefault("files", []).append(str(path.resolve()))
    return path


def target_framework(summary: Mapping[str, Any]) -> str:
    """The target's framework (the summary lists each distinct target/golden pair once; the first is taken)."""
    frameworks: Sequence[Mapping[str, Any]] = summary.get("frameworks") or ()
    return next((str(f["target"]) for f in frameworks if f.get("target")), "")


def console_lines(summary: Mapping[str, Any]) -> list[str]:
    """The console's lines naming the config and the one line a training script needs to use it."""
    path = summary.get("next_dump_config")
    if not path:
        return []
    info = summary.get("next_dump") or {}
    what = f"list {', '.join(info.get('list') or ())}"
    where = ", ".join(f"{k} {v[0]}" for k, v in (("step", info.get("step")), ("rank", info.get("rank"))) if v)
    fw = info.get("framework") or "<framework>"
    return [
        f"  next dump: {path}",
        f"    tensor mode, level {info.get('level')}, {what}{f' ({where})' if where else ''};"
        " in the training script:",
        f"    from msprobe.{fw} import PrecisionDebugger; debugger = PrecisionDebugger(config_path={json.dumps(path)})",
    ]
