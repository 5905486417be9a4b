"""Reading a dump.json the way msprobe 8.3.3 does (spec compare-legacy.md §3).

The per-leaf walk is the core's (:class:`msprobe_core.plugin.Flattener`); only the choice of
which ``data`` keys produce rows differs from 26.2.0:

* every key is read, with or without ``forward``/``backward`` in its name;
* a key whose *last* dot part is ``parameters_grad`` (or ``debug``) is walked whole;
* any other key contributes only its argument members (``input_args``/``input_kwargs``/
  ``input``/``parameters``/``output``, and 1.0.1's ``grad_output``/``grad_input`` read as the
  core reads them, see :mod:`msprobe_core.load.dialects`), so ``X.parameters_grad.0`` entries (whose
  members are parameter names) produce no rows at all; any other member is counted and named
  as by the core loader.
"""

from __future__ import annotations

from pathlib import Path

from msprobe_core.plugin import (
    MODE_MD5,
    MODE_STATISTICS,
    MODE_TENSOR,
    STATE_DEBUG,
    STATE_PARAMETERS_GRAD,
    ApiEntry,
    DumpFormatError,
    DumpTable,
    FieldProblem,
    Flattener,
    detect_kind,
    parse_header,
    read_json_file,
    split_api_key,
    walk_members,
)


def load_legacy_dump(path: Path) -> DumpTable:
    """One dump.json / debug.json as msprobe 8.3.3 turns it into rows."""
    kind = detect_kind(path)
    doc = read_json_file(path, kind + ".json")
    task, data = parse_header(doc, path)
    framework = doc.get("framework") if isinstance(doc.get("framework"), str) else ""
    table = DumpTable(
        source=path,
        kind=kind,
        task=task,
        mode=MODE_TENSOR if task == "tensor" else MODE_STATISTICS,
        framework=framework or "",
        level=doc.get("level") if isinstance(doc.get("level"), str) else None,
    )
    walker = Flattener(table)
    for key, entry in data.items():
        split = split_api_key(key, kind == "debug") or (key, "", "")
        api_idx = len(table.apis)
        api = ApiEntry(key=key, prefix=split[0], call=split[1], direction=split[2], first_row=len(table.name))
        table.apis.append(api)
        last = key.rsplit(".", 1)[-1]
        try:
            if last == STATE_DEBUG or kind == "debug":
                walker.walk(entry, key, STATE_DEBUG, api_idx)
            elif last == STATE_PARAMETERS_GRAD:
                walker.walk(entry, key, STATE_PARAMETERS_GRAD, api_idx)
            elif entry is not None:
                if not isinstance(entry, dict):
                    raise DumpFormatError(f"entry {key} must be a JSON object", path=path)
                walk_members(table, walker, key, entry, api_idx)
        except FieldProblem as problem:
            raise problem.to_error(path, key, entry) from None
        api.n_rows = len(table.name) - api.first_row
    walker.keep_account()
    if task == "statistics" and walker.has_md5:
        table.mode = MODE_MD5
    table.tensor_dir = path.parent / "dump_tensor_data"
    return table


__all__ = ["load_legacy_dump", "MODE_MD5"]
