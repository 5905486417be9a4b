"""The Python API: :func:`compare`, :func:`compare_distributed` and the :class:`CompareResult` they return.

Both functions take the options ``msprobe compare`` takes, as keyword arguments
named like the options' Python names (``fuzzy_match=True``, ``api_mapping="m.yaml"``,
``rank="0,1"``…). Their signatures and docstrings are built from the option
declarations of the installed plugins (:mod:`msprobe_core.options`), so
``help(msprobe_core.compare)`` lists every option; they are made the first
time they are looked up (``msprobe_core.api.compare``), which loads the plugins.

Errors name parameters the Python way (``golden``, ``workers``), not by their
command-line flags: an unknown keyword or a bad value is an
:class:`~msprobe_core.errors.OptionError` (a ``TypeError`` and a ``UsageError``).
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import OptionError, UsageError
from .model import CompareOptions
from .options import api_doc, api_naming, api_parameters, refuse_inapplicable


def build_options(output_dir: str | Path | None, options: dict[str, Any]) -> CompareOptions:
    """Options from Python keyword arguments, checked as :func:`compare` checks them."""
    from .host.registry import get_host

    host = get_host()
    options = dict(options)
    extra = options.pop("extra", None)
    with api_naming():
        values = host.options.from_api(options)
        if output_dir is not None:
            values["output_dir"] = Path(output_dir)
        return _with_extra(host.build_options(values), extra)


def _with_extra(options: CompareOptions, extra: Any) -> CompareOptions:
    """``extra=``: values for stages that have no option of their own (e.g. ``diff_analyze_config``); the
    names of :class:`~msprobe_core.run.context.RunContext` fields go to the run's context (:func:`_run_context`)."""
    from .run.context import split_caller_fields

    if extra is None:
        return options
    if not isinstance(extra, dict):
        raise OptionError(f"extra must be a dict, not {extra!r}", option="extra")
    options.extra = split_caller_fields(extra)[1]
    return options


def _run_context(host: Any, extra: Any) -> Any:
    """The run's :class:`~msprobe_core.run.context.RunContext`: ``extra=`` may set its caller fields
    (``summary_sink``, ``keep_tables``)."""
    from .run.context import RunContext, split_caller_fields

    fields = split_caller_fields(extra)[0] if isinstance(extra, dict) else {}
    return RunContext(host, **fields)


def _path(name: str, value: Any, optional: bool = False) -> Path | None:
    if optional and value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise OptionError(f"{name} must be a path (str or os.PathLike), not {value!r}", option=name)
    return Path(value)


def run_compare(target: Any, golden: Any, output_dir: Any = None, *, function: str = "compare",
                **options: Any) -> CompareResult:
    """What :func:`compare` does (it checks its arguments against its signature first)."""
    from .host.registry import get_host
    from .pipeline.job import JobOutcome, compare_job
    from .run.jobs import run_jobs

    host = get_host()
    extra = options.pop("extra", None)
    run = _run_context(host, extra)
    with api_naming():
        target_path, golden_path = _path("target", target), _path("golden", golden)
        out = _path("output_dir", output_dir, optional=True)
        values = host.options.from_api(options, function)
        if out is not None:
            values["output_dir"] = out
        opts = _with_extra(host.build_options(values), extra)
        if out is not None:
            host.writer(opts.output_format)  # an unknown format is an error before any work
        jobs = host.discover_jobs(target_path, golden_path, opts)
        refuse_inapplicable(host.options.specs, values, jobs)  # an option that would do nothing: before any work
        host.pm.hook.msprobe_check_run(jobs=jobs, options=opts, values=values)  # a plugin's refusal: the same
        if out is not None:
            from .files.removals import finish_removals

            started = _now()
            try:
                outcomes = run_jobs(jobs, opts, host, run)
            finally:
                finish_removals()  # the output directory holds only the results when this returns
        else:
            from .workers.executors import executor_for

            started = _now()
            from .running import running_with

            with executor_for(opts, host), running_with(host):  # one executor (pool, cluster client) for every job
                outcomes = [JobOutcome(job, table=compare_job(job, opts, host)) for job in jobs]
    return CompareResult(outcomes, opts, started, host)


def _now() -> float:
    import time

    return time.time()


class CompareResult:
    """What :func:`msprobe_core.compare` returns.

    * ``table``: the result as a pandas DataFrame (object columns, cells as written; with
      a ``Rank`` column first when several rank pairs were compared); empty when
      nothing could be compared.
    * ``summary``: the run summary as a dict (what ``--json-summary`` writes: verdict
      counts, worst rows, first divergence, files), computed on first use.
    * ``first_divergence``: the summary's first divergent row (a dict: ``rank``, ``node``,
      ``row``, ``reason``…), or ``None``.
    * ``files``: the result files written (none without ``output_dir``).
    * :meth:`write_report`: the self-contained HTML report of ``--report html``.

    Code written for msprobe-core 0.1, when ``compare`` returned the DataFrame itself,
    keeps working: indexing, attributes and iteration go to ``table`` (with a
    ``DeprecationWarning``); ``len(result)`` is the number of rows.
    """

    def __init__(self, outcomes: Sequence[Any], options: CompareOptions, started: float = 0.0,
                 host: Any = None) -> None:
        self._outcomes = list(outcomes)
        self._host = host  # the run's: what its summary and report know of the plugins
        self._options = options
        self._started = started
        self._summary: dict[str, Any] | None = None
        self._made: Any = None  # the summary plugin's RunSummary
        self.files: list[Path] = [Path(f) for o in self._outcomes for f in o.files]
        self.table = _frame(self._outcomes)

    # -- summary and report ------------------------------------------------------
    def _run_summary(self) -> Any:
        """The summary plugin's answer (``msprobe_summarize``), made once."""
        if self._made is None:
            from .errors import UsageError
            from .host.registry import get_host
            from .run.finished import FinishedRun

            host = self._host or get_host()
            with self._running():
                made = host.pm.hook.msprobe_summarize(run=FinishedRun(self._outcomes, self._options,
                                                                      started=self._started))
            if made is None:
                raise UsageError("no summary: the plugin 'summary' is turned off")
            self._made = made
        return self._made

    def _result_views(self) -> list[Any]:
        """Every result's whole view (what the summary and the report were made of)."""
        return list(self._run_summary().results)

    @property
    def summary(self) -> dict[str, Any]:
        """Verdict counts, unmatched rows, worst rows, first divergence and files, as ``--json-summary`` writes them."""
        if self._summary is None:
            self._summary = self._run_summary().data
        return self._summary

    @property
    def first_divergence(self) -> dict[str, Any] | None:
        """Where the two runs part ways: the summary's ``first_divergence`` (``None`` when nothing diverges)."""
        return self.summary["first_divergence"]

    def write_report(self, path: str | os.PathLike[str]) -> Path:
        """Write the self-contained HTML report (summary, error plots, the whole table: a sample of it above
        200,000 rows, see docs/report.md) to ``path``; returns it."""
        from .errors import UsageError
        from .host.registry import get_host

        views, summary = self._result_views(), self.summary
        with self._running():
            written = (self._host or get_host()).pm.hook.msprobe_write_report(views=views, summary=summary,
                                                                                path=Path(path))
        if written is None:
            raise UsageError("no report: the plugin 'report' is turned off")
        return written

    def _running(self) -> Any:
        """The block in which the summary and the report know the run's plugins (:mod:`msprobe_core.running`)."""
        from contextlib import nullcontext

        from .running import running_with

        return nullcontext() if self._host is None else running_with(self._host)

    # -- 0.1 compatibility: the DataFrame itself -----------------------------------
    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, key: Any) -> Any:
        _deprecated("result[...]")
        return self.table[key]

    def __iter__(self) -> Iterator[Any]:
        _deprecated("iterating the result")
        return iter(self.table)

    def __getattr__(self, name: str) -> Any:  # only for names CompareResult does not have
        if name.startswith("_") or name == "table":
            raise AttributeError(name)
        value = getattr(self.table, name)
        _deprecated(f"result.{name}")
        return value

    def __repr__(self) -> str:
        files = f", {len(self.files)} file(s)" if self.files else ""
        return f"<CompareResult: {len(self.table)} rows{files}>"


def _deprecated(what: str) -> None:
    warnings.warn(f"{what}: msprobe_core.compare returns a CompareResult; use result.table for the DataFrame",
                  DeprecationWarning, stacklevel=3)


def _frame(outcomes: Sequence[Any]) -> Any:
    import pandas as pd

    frames = []
    for outcome in outcomes:
        if outcome.table is None:
            continue
        df = outcome.table.to_dataframe()
        if len(outcomes) > 1:
            df.insert(0, "Rank", outcome.job.label)
        frames.append(df)
    if not frames:
        return pd.DataFrame()
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def run_compare_distributed(npu_dump_dir: Any, bench_dump_dir: Any, output_path: Any, **options: Any) -> CompareResult:
    """What :func:`compare_distributed` does."""
    with api_naming():
        for name, value in (("npu_dump_dir", npu_dump_dir), ("bench_dump_dir", bench_dump_dir)):
            if not _path(name, value).is_dir():  # type: ignore[union-attr]
                raise UsageError("compare_distributed needs two step directories")
        if "suffix" in options:
            raise OptionError("argument 'suffix' is not supported for compare_distributed", option="suffix")
    return run_compare(npu_dump_dir, bench_dump_dir, output_path, function="compare_distributed", **options)


# --------------------------------------------------------------------------- the public functions
_PATH = "str | os.PathLike"
_COMPARE_DOC = """Compare two dumps; returns a :class:`~msprobe_core.api.CompareResult`.

``target``/``golden`` are two ``dump.json`` (or ``debug.json``) files, or two
step directories (``dump/step0`` holding ``rank*`` directories; the rank results
are joined, with a ``Rank`` column first). With ``output_dir`` the result files
are also written there, exactly as ``msprobe compare -o`` writes them; without
it nothing is written.

The result: ``.table`` (a pandas DataFrame), ``.summary`` (verdict counts,
worst rows, first divergence), ``.first_divergence``, ``.files`` and
``.write_report(path)`` (the HTML report).

``extra`` is a dict of values for the stages that have no option of their own
(``{"diff_analyze_config": DiffAnalyzeConfig(...)}`` tunes ``diff_analyze``).

An unknown keyword or a bad value raises :class:`~msprobe_core.errors.OptionError`
naming the parameter; unreadable or malformed input raises
:class:`~msprobe_core.errors.InputError` naming the file.
"""
_DISTRIBUTED_DOC = """Compare two step directories rank by rank, writing one result per rank into ``output_path``.

Returns a :class:`~msprobe_core.api.CompareResult` whose table joins the ranks
(``Rank`` column first). Takes the options :func:`msprobe_core.compare` takes.
"""


def _public(name: str, head: list[inspect.Parameter], doc: str,
            run: Callable[..., CompareResult]) -> Callable[..., CompareResult]:
    """A function with a real signature (the head, then one keyword per declared option) calling ``run``."""
    from .host.registry import get_host

    host = get_host()
    extra = inspect.Parameter("extra", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="dict | None")
    shown = inspect.Signature([*head, *api_parameters(host.options), extra], return_annotation="CompareResult")
    # binding checks the positional part; the keywords (and their older aliases) are checked by the option set
    binding = inspect.Signature([*head, inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD)])
    names = {s.plugin: host.distribution_of(s.plugin) for s in host.options.specs}

    def public(*args: Any, **kwargs: Any) -> CompareResult:
        try:
            bound = binding.bind(*args, **kwargs)
        except TypeError as exc:
            raise OptionError(f"{name}(): {exc}") from None
        arguments = dict(bound.arguments)
        options = arguments.pop("options", {})
        return run(*arguments.values(), **options)

    public.__name__ = public.__qualname__ = name
    public.__module__ = "msprobe_core"
    public.__signature__ = shown  # type: ignore[attr-defined]
    public.__doc__ = doc + "\n" + api_doc(host.options, names) + "\n"
    return public


def _head(*names: str, optional: str = "") -> list[inspect.Parameter]:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(n, kind, annotation=_PATH) for n in names]
    if optional:
        params.append(inspect.Parameter(optional, kind, default=None, annotation=f"{_PATH} | None"))
    return params


#: the public functions, each with the plugin host whose options its signature lists
_PUBLIC: dict[str, tuple[object, Callable[..., CompareResult]]] = {}


def __getattr__(name: str) -> Any:
    # built on first use: the signature lists the options of the installed plugins, which this loads;
    # built again when the process-wide host was replaced (reset_host), so it never shows another host's options
    from .host.registry import get_host

    if name == "compare":
        head, doc, run = _head("target", "golden", optional="output_dir"), _COMPARE_DOC, run_compare
    elif name == "compare_distributed":
        head, doc, run = _head("npu_dump_dir", "bench_dump_dir", "output_path"), _DISTRIBUTED_DOC, run_compare_distributed
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    host = get_host()
    cached = _PUBLIC.get(name)
    if cached is None or cached[0] is not host:
        cached = _PUBLIC[name] = (host, _public(name, head, doc, run))
    return cached[1]
