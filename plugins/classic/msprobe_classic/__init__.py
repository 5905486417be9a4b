"""The classic interface of msprobe (the seed documents; reference msprobe 8.3.3).

Command line (see :mod:`msprobe_classic.cli`)::

    msprobe -f pytorch|mindspore compare -i compare.json [-o OUT] [-s] [-c] [-f] [-hl] [-dm yaml] [-am] [-cm] [-lm]

Python API, for scripts written against the seed documents: replace
``from msprobe.pytorch import compare, compare_distributed`` by
``from msprobe_classic import compare, compare_distributed`` (and
``from msprobe.mindspore import ms_compare`` by ``from msprobe_classic import ms_compare``).
``msprobe_core.compare`` is the 26.2.0-style API and is not affected. (This package is the
msprobe-classic plugin, its hooks in :mod:`msprobe_classic.plugin`; it was ``msprobe_core.legacy``
before, which now only raises an error naming this package.)

Results are xlsx workbooks with the classic columns (``Accuracy Reached or Not`` in
tensor mode), red/yellow highlighted rows (on by default; ``highlight=False`` or
``-nhl`` for none) and, unless ``auto_analyze=False``/``-c``, ``advisor_{timestamp}.txt``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msprobe_core.plugin import UsageError

__all__ = ["compare", "compare_distributed", "ms_compare", "ms_compare_distributed"]

_BOOL_FLAGS = ("stack_mode", "auto_analyze", "fuzzy_match", "highlight")
_KNOWN = {*_BOOL_FLAGS, "data_mapping", "api_mapping", "cell_mapping", "layer_mapping", "workers",
          "is_print_compare_log", "suffix"}


def _options(output_path: str | Path, framework: str, kwargs: dict[str, Any]):
    from .run import ClassicOptions, refuse_fuzzy_with_data_mapping

    unknown = set(kwargs) - _KNOWN
    if unknown:
        raise UsageError(f"unknown compare argument(s): {', '.join(sorted(unknown))}")
    for flag in _BOOL_FLAGS:
        if flag in kwargs and not isinstance(kwargs[flag], bool):
            raise UsageError(f"Invalid input parameter, {flag} which should be only bool type.")
    # before a data mapping given as a dict is written out as a yaml file
    refuse_fuzzy_with_data_mapping(kwargs.get("fuzzy_match", False), kwargs.get("data_mapping"), python=True)
    data_mapping = kwargs.get("data_mapping") or None
    if isinstance(data_mapping, dict):
        data_mapping = _yaml_from_dict(data_mapping, Path(output_path))
    return ClassicOptions(
        output_dir=Path(output_path),
        framework=framework,
        stack_mode=kwargs.get("stack_mode", False),
        auto_analyze=kwargs.get("auto_analyze", True),
        fuzzy_match=kwargs.get("fuzzy_match", False),
        highlight=kwargs.get("highlight", True),
        data_mapping=data_mapping,
        api_mapping=kwargs.get("api_mapping") or None,
        cell_mapping=kwargs.get("cell_mapping") or None,
        layer_mapping=kwargs.get("layer_mapping") or None,
        is_print_compare_log=kwargs.get("is_print_compare_log", True),
        workers=kwargs.get("workers"),
    )


def _yaml_from_dict(mapping: dict, output_dir: Path) -> str:
    """A data mapping given as a dict is written next to the results (the matchers read yaml files)."""
    import tempfile

    import yaml

    output_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".data_mapping_", suffix=".yaml", dir=output_dir)
    with open(fd, "w", encoding="utf-8") as fh:
        yaml.safe_dump({str(k): str(v) for k, v in mapping.items()}, fh)
    return name


def _compare(input_param: dict, output_path: str | Path, framework: str, kwargs: dict[str, Any]) -> list[Path]:
    from .run import compare_files

    if not isinstance(input_param, dict):
        raise UsageError("input_param should be dict, please check!")
    npu, bench = input_param.get("npu_json_path"), input_param.get("bench_json_path")
    if not npu or not bench:
        raise UsageError("input_param needs npu_json_path and bench_json_path")
    kwargs = dict(kwargs)
    suffix = kwargs.pop("suffix", "")
    if "is_print_compare_log" in input_param:
        kwargs.setdefault("is_print_compare_log", bool(input_param["is_print_compare_log"]))
    opts = _options(output_path, framework, kwargs)
    stack = input_param.get("stack_json_path")
    try:
        outcome = compare_files(Path(npu), Path(bench), Path(stack) if stack else None, opts, suffix)
    finally:
        _drop_temporary_mapping(kwargs, opts)
    return [p for p in (outcome.result, outcome.advisor) if p is not None]


def _drop_temporary_mapping(kwargs: dict[str, Any], opts: Any) -> None:
    """Remove the yaml written for a data mapping given as a dict."""
    if isinstance(kwargs.get("data_mapping"), dict) and opts.data_mapping:
        Path(opts.data_mapping).unlink(missing_ok=True)


def compare(
    input_param: dict,
    output_path: str | Path,
    stack_mode: bool = False,
    auto_analyze: bool = True,
    fuzzy_match: bool = False,
    **kwargs: Any,
) -> list[Path]:
    """Compare two PyTorch dump.json files (seed signature; the flags may be positional).

    ``input_param``: ``npu_json_path``, ``bench_json_path``, optional ``stack_json_path`` and
    ``is_print_compare_log``. Further keyword arguments: ``highlight`` (default True),
    ``data_mapping`` (yaml path or dict), ``workers``. Returns the files written.
    """
    from msprobe_core.plugin import setup_logging

    setup_logging()
    kwargs.update(stack_mode=stack_mode, auto_analyze=auto_analyze, fuzzy_match=fuzzy_match)
    return _compare(input_param, output_path, "pytorch", kwargs)


def ms_compare(input_param: dict, output_path: str | Path, **kwargs: Any) -> list[Path]:
    """Compare two MindSpore dump.json files (or MindSpore vs PyTorch), as ``msprobe.mindspore.ms_compare``."""
    from msprobe_core.plugin import setup_logging

    setup_logging()
    return _compare(input_param, output_path, "mindspore", kwargs)


def _distributed(npu_dump_dir: str | Path, bench_dump_dir: str | Path, output_path: str | Path,
                 framework: str, kwargs: dict[str, Any]) -> list[Path]:
    from msprobe_core.plugin import setup_logging

    from .run import compare_dirs

    setup_logging()
    if kwargs.get("suffix"):
        raise UsageError("Argument 'suffix' is not supported for compare_distributed.")
    if not Path(npu_dump_dir).is_dir() or not Path(bench_dump_dir).is_dir():
        raise UsageError("compare_distributed needs two step directories")
    opts = _options(output_path, framework, kwargs)
    try:
        outcomes = compare_dirs(Path(npu_dump_dir), Path(bench_dump_dir), opts)
    finally:
        _drop_temporary_mapping(kwargs, opts)
    return [p for o in outcomes for p in (o.result, o.advisor) if p is not None]


def compare_distributed(npu_dump_dir: str | Path, bench_dump_dir: str | Path, output_path: str | Path,
                        **kwargs: Any) -> list[Path]:
    """Compare two PyTorch step directories rank by rank (``compare_result_rank{N}_{ts}.xlsx`` each)."""
    return _distributed(npu_dump_dir, bench_dump_dir, output_path, "pytorch", kwargs)


def ms_compare_distributed(npu_dump_dir: str | Path, bench_dump_dir: str | Path, output_path: str | Path,
                           **kwargs: Any) -> list[Path]:
    """Compare two MindSpore step directories rank by rank."""
    return _distributed(npu_dump_dir, bench_dump_dir, output_path, "mindspore", kwargs)
