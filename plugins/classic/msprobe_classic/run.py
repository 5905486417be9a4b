"""Running classic compares: compare.json, file pairs, step directories (spec compare-legacy.md §1-§2, §9).

The stages are the core's: dumps are loaded and rows paired through the plugin host
(:func:`.plugin.legacy_host` adds 8.3.3's reading and matching rules); this module
then shapes the classic table (:mod:`.table`, :mod:`.tensor`), colours it
(:mod:`.highlight`), writes it (:mod:`.xlsx`) and runs the advisor (:mod:`.advisor`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from msprobe_core.dumpjson import load_stack, read_json_file
from msprobe_core.engine import check_pair, resolve_frameworks
from msprobe_core.errors import InputError, TensorReadError, UsageError
from msprobe_core.logs import banner_end
from msprobe_core.matching import apply_dtype_gate
from msprobe_core.model import MODE_MD5, MODE_STATISTICS, MODE_TENSOR, NA, CompareOptions, DumpTable, MatchResult
from msprobe_core.registry import MatchContext, PluginHost
from msprobe_core.tensor_stage import safe_tensor_path

from . import advisor, highlight, table, tensor, xlsx
from .plugin import legacy_host

log = logging.getLogger("msprobe")

FLOAT_GROUPS = (
    frozenset({"Float16", "Float32", "BFloat16"}),
    frozenset({"torch.float16", "torch.float32", "torch.bfloat16"}),
)
_KINDS = {
    **{n: "int" for n in ("Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Int64", "UInt64")},
    **{f"torch.{n}": "int" for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")},
    **{n: "float" for n in ("Float16", "Float32", "Float64", "BFloat16")},
    **{f"torch.{n}": "float" for n in ("float16", "float32", "float64", "bfloat16")},
    "Bool": "bool",
    "torch.bool": "bool",
    "Complex64": "complex",
    "Complex128": "complex",
    "torch.complex64": "complex",
    "torch.complex128": "complex",
}


@dataclass
class ClassicOptions:
    """Everything a classic compare needs (what ``-s -c -f -hl -dm -am -cm -lm`` and compare.json say)."""

    output_dir: Path = Path("./output")
    framework: str | None = None
    stack_mode: bool = False
    auto_analyze: bool = True
    fuzzy_match: bool = False
    highlight: bool = True
    data_mapping: Any = None
    api_mapping: Any = None
    cell_mapping: Any = None
    layer_mapping: Any = None
    is_print_compare_log: bool = True
    workers: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def core_options(self) -> CompareOptions:
        """The core options that make the plugin host read and match like 8.3.3."""
        ms = self.framework != "pytorch"
        return CompareOptions(
            output_dir=Path(self.output_dir),
            output_format="xlsx",
            fuzzy_match=self.fuzzy_match,
            data_mapping=self.data_mapping or None,
            tensor_log=self.is_print_compare_log,
            workers=self.workers,
            plugins={  # the msprobe-mindspore plugin's options
                "api_mapping": (self.api_mapping or None) if ms else None,
                "cell_mapping": (self.cell_mapping or None) if ms else None,
                "layer_mapping": (self.layer_mapping or None) if ms else None,
            },
            extra={"legacy": True, **self.extra},
        )


@dataclass
class Outcome:
    """What one classic compare wrote."""

    result: Path | None = None
    advisor: Path | None = None
    table: table.LegacyTable | None = None
    advice: advisor.Advice | None = None
    highlighted: highlight.Highlight | None = None


def _gate(cross: bool):
    def compatible(a: str | None, b: str | None) -> bool:
        if cross:
            a = _KINDS.get(a, a) if a is not None else a
            b = _KINDS.get(b, b) if b is not None else b
            if a == b:
                return True
        return any(a in g and b in g for g in FLOAT_GROUPS)

    return compatible


def legacy_match(target: DumpTable, golden: DumpTable, options: CompareOptions, host: PluginHost) -> MatchResult:
    """Pair rows: the host's normalisers and mapper, then 8.3.3's dtype gate."""
    tf, gf = resolve_frameworks(target, golden, host)
    tkeys = host.compare_keys(target, "target", options, list(target.name))
    gkeys = host.compare_keys(golden, "golden", options, list(golden.name))
    ctx = MatchContext(target, golden, tkeys, gkeys, options, tf is not gf, host)
    match = host.mapper_for(options, kind=target.kind).run(ctx)
    if match.dtype_gate:
        match = apply_dtype_gate(match, target.dtype, golden.dtype, _gate(tf is not gf))
    return match


def _stack_mode(npu_json: Path, stack_json: Path | None, stack_flag: bool) -> tuple[bool, Path | None]:
    if stack_json is not None:
        return stack_flag, stack_json
    log.warning(
        "Missing stack_path in the configuration file. "
        "Automatically detecting stack.json to determine whether to display NPU_Stack_Info."
    )
    from msprobe_core.validation import dump_file_beside

    candidate = dump_file_beside(npu_json, "stack.json")  # no symlink out of the dump, as for every file of it
    if candidate is not None:
        return True, candidate
    log.warning("stack.json is not found in dump dir %s.", npu_json.parent)
    return False, None


def _check_names(npu: Path, bench: Path) -> str:
    for kind in ("dump", "debug"):
        if npu.name.endswith(f"{kind}.json") and bench.name.endswith(f"{kind}.json"):
            return kind
    raise UsageError(
        "Please check the json path is valid and ensure that neither npu_path nor bench_path is None "
        f"(both must end with dump.json, or both with debug.json: {npu}, {bench})."
    )


def compare_files(
    npu_json: Path, bench_json: Path, stack_json: Path | None, opts: ClassicOptions, suffix: str = ""
) -> Outcome:
    """One classic compare of two dump.json (or debug.json) files."""
    npu_json, bench_json = Path(npu_json), Path(bench_json)
    for p in (npu_json, bench_json):
        if not p.is_file():
            raise InputError("dump file does not exist or is not a file", path=p)
    kind = _check_names(npu_json, bench_json)
    stack_mode, stack_path = _stack_mode(npu_json, Path(stack_json) if stack_json else None, opts.stack_mode)
    if stack_mode and (stack_path is None or not stack_path.is_file()):
        raise InputError("stack.json does not exist", path=stack_path)
    log.info("Please check whether the input data belongs to you. If not, there may be security risks.")
    out_dir = Path(opts.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o750)
    host = legacy_host()
    options = opts.core_options()
    target = host.load_dump(npu_json, options)
    golden = host.load_dump(bench_json, options)
    for t in (target, golden):
        if not t.framework and opts.framework:
            t.framework = opts.framework
    _warn_unrecognised(target, golden)
    check_pair(target, golden)
    if target.mode == MODE_TENSOR:
        for t in (target, golden):
            if t.tensor_dir is None or not t.tensor_dir.is_dir():
                raise InputError("tensor dump has no dump_tensor_data directory next to it", path=t.source)
    if not len(target.apis):
        log.warning("No APIs found in dump.json.")
    match = legacy_match(target, golden, options, host)
    if not match.target:
        log.warning("Can`t match any op. No compare result file generated.")
        return Outcome()
    stack = load_stack(stack_path) if stack_mode and stack_path is not None else None
    result = table.build_base(target, golden, match, stack)
    if result.mode == MODE_STATISTICS:
        table.stats_columns(result)
    elif result.mode == MODE_MD5:
        table.md5_columns(result)
    else:
        _tensor_columns(result, target, golden, opts)
    return _finish(result, kind, out_dir, opts, suffix)


def _warn_unrecognised(target: DumpTable, golden: DumpTable) -> None:
    """Name what the two files held that the loader did not understand (see :mod:`msprobe_core.dialects`)."""
    from msprobe_core.dialects import merge_records, records_of, warn_unrecognised

    warn_unrecognised(merge_records([records_of(target), records_of(golden)]))


def _tensor_columns(result: table.LegacyTable, target: DumpTable, golden: DumpTable, opts: ClassicOptions) -> None:
    data = result.data
    n = len(result)
    err = []
    for k in range(n):
        msg = "" if result.matched[k] else table.NO_BENCH
        if not data[table.REQ_GRAD_CONSIST][k]:
            msg = table.REQ_GRAD_MSG
        err.append(msg)
    # 8.3.3 looks data files up by NPU name: a repeated name uses its last pair
    pair_of = {name: (a, b) for name, a, b in zip(data["NPU Name"], data["_npu_data"], data["_bench_data"])}
    cells: list[list[Any]] = [[]] * n
    msgs = [""] * n
    tasks: list[tensor.PairTask] = []
    for k, name in enumerate(data["NPU Name"]):
        npu_dn, bench_dn = pair_of[name]
        if str(npu_dn) == "-1":
            cells[k], msgs[k] = [tensor.UNSUPPORTED] * 6, "NPU does not have data file."
        elif str(bench_dn) == "-1":
            cells[k], msgs[k] = [tensor.UNSUPPORTED] * 6, "Bench does not have data file."
        elif bench_dn == NA:
            cells[k], msgs[k] = [tensor.UNSUPPORTED] * 6, "Bench api/module unmatched."
        else:
            error_file = str([npu_dn, bench_dn])
            try:
                npu_path = safe_tensor_path(target.tensor_dir, npu_dn)
                bench_path = safe_tensor_path(golden.tensor_dir, bench_dn)
            except TensorReadError:
                cells[k], msgs[k] = [tensor.UNSUPPORTED] * 6, f"Dump file: {error_file} not found or read failed."
                continue
            tasks.append(
                tensor.PairTask(k, str(npu_path), str(bench_path), target.framework, golden.framework, error_file)
            )
    for row, (row_cells, row_msg) in tensor.run(tasks, opts.workers).items():
        cells[row], msgs[row] = row_cells, row_msg
    names = data["NPU Name"]
    bench_names = data["Bench Name"]
    for c, col in enumerate(table.TENSOR_METRICS):
        data[col] = [row[c] for row in cells]
    data[table.ACCURACY] = [tensor.accuracy(row[0], row[2]) for row in cells]
    for k in range(n):
        msg = err[k] + msgs[k]
        if opts.fuzzy_match and names[k] != bench_names[k] and bench_names[k] != NA:
            msg += tensor.FUZZY_NOTE
        err[k] = msg
        if opts.is_print_compare_log:
            log.info("start compare: %s", names[k])
            if "does not have data file" in msgs[k] or "Bench api/module unmatched" in msgs[k]:
                log.info("[%s] Compare result: %s ", names[k], msg)
            else:
                c = cells[k]
                log.info(
                    "[%s] Compare result: cosine %s, euc_dist %s, max_abs_err %s, max_relative_err %s, "
                    "one_thousand_err_ratio %s, five_thousand_err_ratio %s, %s",
                    names[k], c[0], c[1], c[2], c[3], c[4], c[5], msg,
                )
    data[table.ERR] = err
    data[table.DATA_NAME] = [str([a, b]) for a, b in zip(data["_npu_data"], data["_bench_data"])]


def _finish(result: table.LegacyTable, kind: str, out_dir: Path, opts: ClassicOptions, suffix: str) -> Outcome:
    from msprobe_core.outputs import run_stamp

    with run_stamp(out_dir, keep_earlier=False) as stamp:  # not the name another run writes in this very second
        return _write_outcome(result, kind, out_dir, opts, suffix, stamp)


def _write_outcome(result: table.LegacyTable, kind: str, out_dir: Path, opts: ClassicOptions, suffix: str,
                   stamp: str) -> Outcome:
    prefix = "debug_compare_result" if kind == "debug" else "compare_result"
    path = out_dir / f"{prefix}{suffix}_{stamp}.xlsx"
    if path.exists():
        log.warning("%s will be deleted.", path)
        path.unlink()
    outcome = Outcome(table=result)
    log.info("Saving result excel file in progress. The file path is: %s.", path.resolve())
    colour = None
    if opts.highlight and kind == "dump":
        hl = highlight.find_rows(result)
        highlight.apply_messages(result, hl)
        colour = hl.colour
        outcome.highlighted = hl
    if opts.highlight:
        log.info("Coloring Excel in progress.")
    outcome.result = xlsx.write_workbook(path, result.columns, result.rows(), len(result), colour, opts.highlight)
    if opts.auto_analyze:
        outcome.advice = advisor.analyse(result)
        outcome.advisor = advisor.write_advice(outcome.advice, out_dir, suffix, stamp)
    banner_end(log)
    return outcome


def compare_dirs(npu_dir: Path, bench_dir: Path, opts: ClassicOptions) -> list[Outcome]:
    """compare_distributed: every rank pair of two step directories (mixed graph/pynative dumps too)."""
    from msprobe_core.discover import discover_jobs

    options = opts.core_options()
    jobs = discover_jobs(Path(npu_dir), Path(bench_dir), options)
    outcomes = []
    for job in jobs:
        if job.extra.get("missing"):
            log.error("%s; skipping %s comparison.", job.extra["missing"], job.label)
            continue
        suffix = job.stem.split("compare_result", 1)[1]
        sub = replace(opts, output_dir=Path(job.output_dir), stack_mode=False)
        try:
            outcomes.append(compare_files(job.target, job.golden, None, sub, suffix))
        except InputError as exc:
            log.error("%s Skipping %s comparison.", exc, job.label)
    return outcomes


def run_compare_json(path: Path, opts: ClassicOptions, diff_analyze: bool = False) -> list[Outcome]:
    """``msprobe -f FW compare -i compare.json``: file form, directory form or kernel form."""
    doc = read_json_file(Path(path), "compare.json")
    if not isinstance(doc, dict):
        raise UsageError("input_param should be dict, please check!")
    npu_path, bench_path = doc.get("npu_path"), doc.get("bench_path")
    if not npu_path:
        raise UsageError("Missing npu_path in input configuration file, please check!")
    if not bench_path:
        raise UsageError("Missing bench_path in input configuration file, please check!")
    from msprobe_core.validation import CompareJson, validate

    validate(CompareJson, doc, path=path, error=UsageError)  # types: one line naming the key, never a traceback
    opts = replace(opts, is_print_compare_log=bool(doc.get("is_print_compare_log", True)))
    npu, bench = Path(npu_path), Path(bench_path)
    for p in (npu, bench):
        if not p.exists():
            raise InputError("path in compare.json does not exist", path=p)
    if npu.is_file() and bench.is_file():
        stack = doc.get("stack_path")
        return [compare_files(npu, bench, Path(stack) if stack else None, opts)]
    if npu.is_dir() and bench.is_dir():
        if doc.get("rank_id") is not None or doc.get("step_id") is not None or diff_analyze:
            _run_core(npu, bench, opts, doc, diff_analyze)
            return []
        if doc.get("common") is True:
            raise UsageError("the 'common' directory compare of msprobe 8.3.3 is not supported")
        return compare_dirs(npu, bench, opts)
    raise UsageError("The npu_path and bench_path need to be of the same type.")


def _ids(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise UsageError(f"'{what}' in compare.json must be a list of integers")
    return ",".join(str(v) for v in value)


def _run_core(npu: Path, bench: Path, opts: ClassicOptions, doc: dict, diff_analyze: bool) -> None:
    """Kernel dumps (``rank_id``/``step_id``) and ``-da`` go to the core engine and its plugins."""
    from msprobe_core.engine import run_jobs
    from msprobe_core.registry import get_host

    options = replace(opts.core_options(), extra={}, output_format="xlsx", diff_analyze=diff_analyze)
    host = get_host()
    if doc.get("rank_id") is not None or doc.get("step_id") is not None:
        if host.options.get("rank") is None:
            raise UsageError("rank_id/step_id in compare.json compare kernel dumps, which needs the msprobe-kernel plugin")
        options = options.with_values(rank=_ids(doc.get("rank_id"), "rank_id"),
                                      step=_ids(doc.get("step_id"), "step_id") or None)
    outcomes = run_jobs(host.discover_jobs(npu, bench, options), options, host)
    if any(o.files for o in outcomes):
        banner_end(log)
