"""Running classic compares: compare.json, file pairs, step directories (spec compare-legacy.md §1-§2, §9).

Every compare runs through the core's supported entry for front ends
(``msprobe_core.plugin.run_compare``): the stages are the core engine's, and this plugin's hooks make
them read, match, judge and write as 8.3.3 does (:mod:`msprobe_classic.plugin`). What is left here is the classic front end:
compare.json, 8.3.3's checks and warnings before a compare, its job names, and its way
of going on with the next rank when one fails. Kernel dumps (``rank_id``/``step_id``)
and ``-da`` are plain core runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from msprobe_core.plugin import (
    CompareJob,
    CompareOptions,
    DumpTable,
    InputError,
    PluginHost,
    ResultTable,
    UsageError,
    banner_end,
    get_host,
    read_json_file,
    run_compare,
)

from .settings import PLUGIN, WRITER, ClassicSettings

log = logging.getLogger("msprobe")
_HOST: PluginHost | None = None
#: this distribution's entry point in the plugins' group (pyproject.toml)
_PLUGIN_NAME = "classic"


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

    def core_options(self, stack: bool = False, stack_path: Path | None = None) -> CompareOptions:
        """The options of one classic compare through the core engine (``stack``: write ``NPU_Stack_Info``)."""
        ms = self.framework != "pytorch"
        settings = ClassicSettings(framework=self.framework, highlight=self.highlight,
                                   auto_analyze=self.auto_analyze, stack=stack, stack_path=stack_path)
        return CompareOptions(
            output_dir=Path(self.output_dir),
            output_format=WRITER,
            workers=self.workers,
            plugins={  # the default plugins 'fuzzy', 'data_mapping' (8.3.3's own matchers read them) and
                # 'tensor_log', and the msprobe-mindspore plugin's options
                "fuzzy_match": self.fuzzy_match,
                "data_mapping": self.data_mapping or None,
                "tensor_log": self.is_print_compare_log,
                "api_mapping": (self.api_mapping or None) if ms else None,
                "cell_mapping": (self.cell_mapping or None) if ms else None,
                "layer_mapping": (self.layer_mapping or None) if ms else None,
            },
            plugin_data={PLUGIN: settings},
        )


def refuse_fuzzy_with_data_mapping(fuzzy_match: bool, data_mapping: Any, *, python: bool = False) -> None:
    """``-dm`` together with ``-f``: refused, before anything is written.

    The seed documents say a data mapping compare does not support fuzzy matching (the
    mapping file says which rows pair); accepting both would let one of them silently do
    nothing. ``python``: name the keywords of the Python API instead of the flags.
    """
    if not (fuzzy_match and data_mapping):
        return
    dm, fm = ("data_mapping", "fuzzy_match=True") if python else ("-dm/--data_mapping", "-f/--fuzzy_match")
    raise UsageError(f"{dm} cannot be used together with {fm}: fuzzy matching is not supported with a data mapping "
                     "(its file says which rows pair); leave one of them out",
                     path=data_mapping if isinstance(data_mapping, (str, Path)) else None)


@dataclass
class Outcome:
    """What one classic compare wrote."""

    result: Path | None = None
    advisor: Path | None = None
    table: ResultTable | None = None


def classic_host() -> PluginHost:
    """The plugin host of classic compares: the process-wide one, with this plugin registered in it.

    The entry point registers it; a host that did not load it (autoloading switched off,
    ``MSPROBE_PLUGIN_DISTRIBUTIONS`` without msprobe-classic) gets a host of its own with it.
    """
    global _HOST
    host = get_host()
    if _registered(host):
        return host
    if _HOST is None:
        _HOST = PluginHost()  # the environment may let the entry point load it here (the host given was built without)
        if not _registered(_HOST):
            # the plugin module as its entry point names it: the front end does not import the module that
            # registers the front end's command line (no import cycle)
            from importlib.metadata import entry_points

            (point,) = entry_points(group="msprobe_core.plugins", name=_PLUGIN_NAME)
            _HOST = PluginHost(extra_plugins=[point.load()])
    return _HOST


def _registered(host: PluginHost) -> bool:
    """Whether ``host`` holds this plugin (its workbook writer is the sign: no host internals needed)."""
    try:
        host.writer(WRITER)
    except UsageError:
        return False
    return True


def _stack_mode(npu_json: Path, stack_json: Path | None, stack_flag: bool) -> tuple[bool, Path | None]:
    if stack_json is not None:
        return stack_flag, stack_json
    log.warning(
        "Missing stack_path in the configuration file. "
        "Automatically detecting stack.json to determine whether to display NPU_Stack_Info."
    )
    from msprobe_core.plugin import dump_file_beside

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
    from .xlsx import open_sheets_of  # numpy: when a compare runs

    npu_json, bench_json = Path(npu_json), Path(bench_json)
    for p in (npu_json, bench_json):
        if not p.is_file():
            raise InputError("dump file does not exist or is not a file", path=p)
    host = classic_host()
    open_sheets_of(host)  # no xlsx format (-p no:xlsx): one line before any work
    kind = _check_names(npu_json, bench_json)
    stack_mode, stack_path = _stack_mode(npu_json, Path(stack_json) if stack_json else None, opts.stack_mode)
    if stack_mode and (stack_path is None or not stack_path.is_file()):
        raise InputError("stack.json does not exist", path=stack_path)
    log.info("Please check whether the input data belongs to you. If not, there may be security risks.")
    out_dir = Path(opts.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o750)
    # the stack file compare.json names is read by this plugin's loader; stack.json beside the dump by the core
    explicit = stack_path if stack_mode and stack_json else None
    options = opts.core_options(stack=stack_mode, stack_path=explicit)
    prefix = "debug_compare_result" if kind == "debug" else "compare_result"
    job = CompareJob(npu_json, bench_json, out_dir, f"{prefix}{suffix}", label=npu_json.parent.name)
    return run_job(job, options, host)


def run_job(job: CompareJob, options: CompareOptions, host: PluginHost) -> Outcome:
    """One classic job through the core's stages alone: 8.3.3's front end owns its directory and console."""
    (done,) = run_compare([job], options, host, stages_only=True, on_loaded=_warn_if_no_apis)
    if not done.files:
        return Outcome()  # nothing matched: the core said so, as 8.3.3 does
    banner_end(log)
    files = done.files
    return Outcome(result=files[0], advisor=files[1] if len(files) > 1 else None, table=done.table)


def _warn_if_no_apis(target: DumpTable, golden: DumpTable) -> None:
    if not len(target.apis):
        log.warning("No APIs found in dump.json.")


def compare_dirs(npu_dir: Path, bench_dir: Path, opts: ClassicOptions) -> list[Outcome]:
    """compare_distributed: every rank pair of two step directories (mixed graph/pynative dumps too)."""
    from msprobe_core.plugin import discover_jobs

    jobs = discover_jobs(Path(npu_dir), Path(bench_dir), opts.core_options())
    outcomes = []
    for job in jobs:
        if job.missing:
            log.error("%s; skipping %s comparison.", job.missing, job.label)
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
        raise UsageError("input_param should be dict, please check!", path=path)
    npu_path, bench_path = doc.get("npu_path"), doc.get("bench_path")
    if not npu_path:
        raise UsageError("Missing npu_path in input configuration file, please check!", path=path)
    if not bench_path:
        raise UsageError("Missing bench_path in input configuration file, please check!", path=path)
    from msprobe_core.plugin import validate

    from .schemas import CompareJson  # pydantic: only when a compare.json is read

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
    def kind(p: Path) -> str:
        return "a file" if p.is_file() else "a directory" if p.is_dir() else "neither a file nor a directory"

    raise UsageError(f"The npu_path and bench_path need to be of the same type. npu_path {npu} is {kind(npu)}, "
                     f"bench_path {bench} is {kind(bench)}", path=path)


def _ids(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise UsageError(f"'{what}' in compare.json must be a list of integers")
    return ",".join(str(v) for v in value)


def _run_core(npu: Path, bench: Path, opts: ClassicOptions, doc: dict, diff_analyze: bool) -> None:
    """Kernel dumps (``rank_id``/``step_id``) and ``-da`` go to the core engine and its plugins."""
    from .xlsx import open_sheets_of

    # -da is the default plugin diff_analyze's option
    options = replace(opts.core_options(), plugin_data={}, output_format="xlsx").with_values(diff_analyze=diff_analyze)
    host = get_host()
    open_sheets_of(host)  # the results are the xlsx format's workbooks: none (-p no:xlsx) is one line, before any work
    if doc.get("rank_id") is not None or doc.get("step_id") is not None:
        if host.options.get("rank") is None:
            raise UsageError("rank_id/step_id in compare.json compare kernel dumps, which needs the msprobe-kernel plugin")
        options = options.with_values(rank=_ids(doc.get("rank_id"), "rank_id"),
                                      step=_ids(doc.get("step_id"), "step_id") or None)
    jobs = host.discover_jobs(npu, bench, options)
    _refuse_idle_options(jobs, opts, diff_analyze, host)
    outcomes = run_compare(jobs, options, host)
    if any(o.files for o in outcomes):
        banner_end(log)


#: the classic flags of the options a core run may not use (``OptionSpec.kinds``), by option name
_CLASSIC_FLAGS = {"fuzzy_match": "-f/--fuzzy_match", "data_mapping": "-dm/--data_mapping",
                  "api_mapping": "-am/--api_mapping", "cell_mapping": "-cm/--cell_mapping",
                  "layer_mapping": "-lm/--layer_mapping", "diff_analyze": "-da/--diff_analyze"}


def _refuse_idle_options(jobs: list[CompareJob], opts: ClassicOptions, diff_analyze: bool, host: PluginHost) -> None:
    """Options given on the classic command line that would do nothing for these jobs' dumps: one error.

    What applies where is what each option declares (``OptionSpec.kinds``) against the kind the
    discovery found (``CompareJob.kind``, kernel dumps); the names are the classic flags.
    """
    given = {"fuzzy_match": opts.fuzzy_match, "data_mapping": opts.data_mapping, "api_mapping": opts.api_mapping,
             "cell_mapping": opts.cell_mapping, "layer_mapping": opts.layer_mapping, "diff_analyze": diff_analyze}
    for job in jobs:
        specs = {name: host.options.get(name) for name, value in given.items() if value}
        idle = [_CLASSIC_FLAGS[n] for n, spec in specs.items() if job.kind and spec is not None
                and not spec.applies_to(job.kind)]
        if idle:
            one = len(idle) == 1
            named = idle[0] if one else f"{', '.join(idle[:-1])} and {idle[-1]}"
            raise UsageError(f"{named} {'does' if one else 'do'} nothing in a compare of {job.kind} dumps, which "
                             f"npu_path/bench_path are; leave {'it' if one else 'them'} out", path=job.target)
