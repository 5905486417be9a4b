"""``msprobe merge_result``: collect chosen APIs' metrics from per-rank results into one workbook.

Spec: compare-modes.md §9 (msprobe 26.2.0). Input is a directory of per-rank xlsx results
(``compare_result_rank{N}_{timestamp}.xlsx``, as ``msprobe compare --xlsx`` and the classic
interface write them); output is ``multi_ranks_compare_merge_{timestamp}.xlsx`` with one sheet
per metric (``compare_index``), one row per matching row name and one column per rank.

Cells are read as msprobe reads them (``pandas.read_excel(keep_default_na=False)``): a column
whose every cell is a number or numeric text becomes numeric, anything else is kept as read, and
``N/A`` / ``unsupported`` / ``Nan`` values are shown as ``NPU:<NPU max>  Bench:<Bench max>``.

msprobe reads xlsx results only; compare's default output is CSV, so a folder of per-rank CSV results
(``compare_result_rank{N}[_{timestamp}].csv``) is merged too, into ``multi_ranks_compare_merge_{timestamp}.csv``:
the same sheets one after the other, a ``Compare Index`` column first, cells copied as the results spell them.
A folder holding two or more xlsx results is merged from those (msprobe's route), whatever CSVs it holds.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from msprobe_core.plugin import (
    MODE_MD5,
    MODE_STATISTICS,
    MODE_TENSOR,
    InputError,
    MappingError,
    OutputError,
    Register,
    hookimpl,
)
from msprobe_core.plugin import result_columns as C

log = logging.getLogger("msprobe")

MERGE_NAME = re.compile(r"^compare_result_rank(\d+)(-rank\1)?_\d{14}\.xlsx$")
SINGLE_NAME = re.compile(r"^compare_result_(rank|rank-rank)_\d{14}\.xlsx$")
# CSVs were invisible to msprobe: names without a timestamp (a renamed copy) are taken too
MERGE_CSV_NAME = re.compile(r"^(?P<base>compare_result_rank(?P<rank>\d+)(-rank(?P=rank))?(_\d{14})?)(_part_(?P<part>\d+))?\.csv$")
#: first column of a merged CSV: which sheet of the xlsx form a row belongs to
INDEX_COLUMN = "Compare Index"
STATISTICS_INDEX = [*C.STATS_METRIC_COLUMNS, C.REQUIRES_GRAD_CONSISTENT]
TENSOR_INDEX = [*C.TENSOR_METRIC_COLUMNS, C.REQUIRES_GRAD_CONSISTENT]
NOT_COMPUTED = ("N/A", "unsupported", "Nan")


@dataclass
class RankResult:
    """The rows of one rank's result that the merge needs, by column."""

    rank: int
    path: Path
    mode: str = ""
    columns: dict[str, list[Any]] = field(default_factory=dict)


def result_files(input_dir: Path) -> list[tuple[int, list[Path]]]:
    """The per-rank results of ``input_dir``, sorted by rank (§9 step 1), each as its files: its xlsx results
    when it holds two or more (msprobe's route), else its CSV results (a result past a million rows is
    ``_part_N`` files, in part order); the error when neither says what the folder holds."""
    if input_dir.is_file():
        raise InputError(f"is a file; -i takes the folder that holds the compare results (here: {input_dir.parent})",
                         path=input_dir)
    if not input_dir.is_dir():
        raise InputError("input directory does not exist or is not a directory", path=input_dir)
    found: list[tuple[int, list[Path]]] = []
    parts: dict[str, list[tuple[int, Path]]] = {}  # a CSV result's files, by the name they share
    single = 0
    for p in sorted(input_dir.iterdir()):
        if p.suffix == ".csv":
            m = MERGE_CSV_NAME.match(p.name)
            if m:
                parts.setdefault(m["base"], []).append((int(m["part"] or 0), p))
            continue
        if p.suffix != ".xlsx":
            continue
        m = MERGE_NAME.match(p.name)
        if m:
            found.append((int(m.group(1)), [p]))
        elif SINGLE_NAME.match(p.name):
            single += 1
            log.warning("Single rank compare result do not need to be merged.")
        else:
            raise InputError(f"Wrong compare result name: {p.name}, please check!", path=input_dir)
    csvs = [(int(MERGE_CSV_NAME.match(f"{base}.csv")["rank"]), [p for _, p in sorted(files)])
            for base, files in parts.items()]
    if len(found) >= 2:
        if csvs:
            log.warning("Merging the %d xlsx results of %s; its %d CSV results are left out.",
                        len(found), input_dir, len(csvs))
        return sorted(found, key=lambda x: x[0])
    if len(csvs) >= 2:
        if found:
            log.warning("Merging the %d CSV results of %s; its xlsx result %s is left out.",
                        len(csvs), input_dir, found[0][1][0].name)
        return sorted(csvs, key=lambda x: x[0])
    held = f"{len(found) + single} xlsx and {len(csvs)} CSV per-rank results"
    raise InputError(f"Number of compare result is no more than 1, no need to merge. The folder holds {held} "
                     "(compare_result_rank<N>_<timestamp>.xlsx or .csv; two or more of one kind are merged).", path=input_dir)


def load_config(path: Path) -> tuple[list[str], list[str] | None]:
    """``api`` and ``compare_index`` of the merge config, validated as msprobe does (§9 step 2)."""
    from msprobe_core.plugin import read_yaml

    doc = read_yaml(Path(path), "merge config", error=MappingError)
    if not doc:
        raise MappingError("config.yaml is empty, please check.", path=path)
    if not isinstance(doc, dict):
        raise MappingError(f"config must be a mapping with 'api' and 'compare_index', got {type(doc).__name__}", path=path)
    api = doc.get("api")
    if not api:
        raise MappingError("The APIs required to merge data were not found.", path=path)
    if not isinstance(api, list):
        raise MappingError("The config format of 'api' is incorrect, please check.", path=path)
    index = doc.get("compare_index")
    if index is not None and not isinstance(index, list):
        raise MappingError("The config format of 'compare_index' is incorrect, please check.", path=path)
    return [str(a) for a in api], ([str(i) for i in index] if index else None)


def _numeric_text(value: Any) -> float | int | None:
    from msprobe_core.plugin import pandas_strtod

    if value.__class__ is bool:
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and value.strip():
        number = pandas_strtod(value)
        if number is not None:
            text = value.strip().lstrip("+-")
            if text.isdigit():
                return int(value)
            return number
    return None


def _convert_column(values: list[Any]) -> list[Any]:
    """pandas' type inference on a read column: all numeric → numbers (ints if all integral text/ints)."""
    converted = []
    all_int = True
    for v in values:
        number = _numeric_text(v)
        if number is None:
            return values
        if not isinstance(number, int):
            all_int = False
        converted.append(number)
    if not all_int:
        converted = [float(v) for v in converted]
    return converted


def read_result(rank: int, path: Path | list[Path]) -> RankResult:
    """The first sheet of one result, its dump mode and its columns (§9 step 3); a CSV result (the rows of
    all its ``_part_N`` files) keeps its cells as text, as written (they are written back to a CSV)."""
    paths = [path] if isinstance(path, Path) else list(path)
    if paths[0].suffix == ".csv":
        from .summary.result_files import read_csv_table  # the summary's reader of result files

        header, body = read_csv_table(paths[0])
        for part in paths[1:]:
            more_header, more = read_csv_table(part)
            if more_header != header:
                raise InputError(f"the columns of this part are not those of {paths[0].name}", path=part)
            body += more
        return _ranked(rank, paths[0], header, body, convert=False)
    return _ranked(rank, paths[0], *_read_xlsx(paths[0]), convert=True)


def _read_xlsx(path: Path) -> tuple[list[str], list[list[Any]]]:
    from openpyxl import load_workbook

    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001 - openpyxl raises many kinds for a bad file
        raise InputError(f"cannot read the xlsx result ({exc})", path=path) from None
    try:
        if not wb.worksheets:
            raise InputError("the xlsx result holds no worksheet", path=path)
        rows = wb.worksheets[0].iter_rows(values_only=True)
        header = [("" if c is None else str(c)) for c in next(rows, ())]
        body = [list(r) for r in rows]
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a sheet is parsed as it is read: broken XML, entity bombs…
        raise InputError(f"cannot read the xlsx result ({exc})", path=path) from None
    finally:
        wb.close()
    return header, body


def _ranked(rank: int, path: Path, header: list[str], body: list[list[Any]], convert: bool) -> RankResult:
    result = RankResult(rank, path)
    if C.COSINE in header:
        result.mode = MODE_TENSOR
    elif C.MAX_DIFF in header:
        result.mode = MODE_STATISTICS
    elif C.NPU_MD5 in header:
        result.mode = MODE_MD5
    if result.mode in (MODE_TENSOR, MODE_STATISTICS) and not {C.NPU_NAME, C.NPU_MAX, C.BENCH_MAX} <= set(header):
        result.mode = ""
    for k, name in enumerate(header):
        column = [("" if row[k] is None else row[k]) if k < len(row) else "" for row in body]
        result.columns[name] = column if name == C.NPU_NAME or not convert else _convert_column(column)
    return result


def valid_indexes(result: RankResult) -> list[str]:
    """Every metric of this result's dump mode, in msprobe's order (plugin metric columns too)."""
    if result.mode == MODE_STATISTICS:
        return list(STATISTICS_INDEX)
    # columns of a tensor result the core does not declare as metrics are plugin metric columns
    known = C.known_columns()
    extra = [c for c in result.columns if c not in TENSOR_INDEX and getattr(known.get(c), "kind", C.METRIC) == C.METRIC]
    return TENSOR_INDEX[:-1] + extra + TENSOR_INDEX[-1:]


def _check_value(value: Any) -> None:
    from msprobe_core.plugin import is_formula_like  # cells imports numpy: not at start-up (msprobe --help)

    if isinstance(value, str) and is_formula_like(value):
        raise InputError(f"Malicious value [{value}] is not allowed to be written into the merged xlsx.")


def extract(result: RankResult, apis: list[str], indexes: list[str]) -> dict[str, dict[str, Any]]:
    """``{index: {row name: value}}`` of the configured APIs in one rank's result (§9 steps 4-5)."""
    names = result.columns[C.NPU_NAME]
    first_row: dict[str, int] = {}
    for k, name in enumerate(names):
        first_row.setdefault(str(name), k)
    selected: list[str] = []
    for api in apis:
        pattern = api + "."
        hits = [str(n) for n in names if pattern in str(n)]
        if not hits:
            log.warning("%s not found in rank%d compare result.", api, result.rank)
        selected.extend(hits)
    npu_max, bench_max = result.columns.get(C.NPU_MAX), result.columns.get(C.BENCH_MAX)
    out: dict[str, dict[str, Any]] = {}
    for index in indexes:
        values: dict[str, Any] = {}
        column = result.columns[index]
        for name in selected:
            _check_value(name)
            row = first_row[name]
            value = column[row]
            _check_value(value)
            if isinstance(value, str) and value in NOT_COMPUTED and npu_max is not None and bench_max is not None:
                value = f"NPU:{npu_max[row]}  Bench:{bench_max[row]}"
            values.setdefault(name, value)
        out[index] = values
    return out


def merge(input_dir: Path, output_dir: Path, config: Path) -> Path:
    """Run the whole merge; returns the workbook written."""
    from msprobe_core.plugin import run_host, run_stamp

    files = result_files(Path(input_dir))
    apis, configured = load_config(Path(config))
    indexes = configured
    per_rank: list[tuple[int, dict[str, dict[str, Any]]]] = []
    for rank, path in files:
        log.info("Parsing rank%d compare result...", rank)
        result = read_result(rank, path)
        if not result.columns.get(C.NPU_NAME):
            log.warning("Rank%d compare result is empty and will not shown in merged result.", rank)
            continue
        if result.mode == MODE_MD5:
            log.warning(
                "Rank%d compare result is 'md5' dump task and does not support merging result, please check! "
                "The compare result will not be shown in merged result.", rank
            )
            continue
        if not result.mode:
            log.warning(
                "A valid dump task can not be identified from rank%d compare result, please check! "
                "The compare result will not be shown in merged result.", rank
            )
            continue
        valid = valid_indexes(result)
        wanted = indexes or valid
        if not set(wanted) <= set(valid):
            log.warning(
                "Compare indexes in rank%d compare result are not consistent with those in other compare results, "
                "please check!", rank
            )
            log.warning("The compare result will not be shown in merged result.")
            log.warning("The invalid compare indexes: %s", sorted(set(wanted) - set(valid)))
            continue
        indexes = wanted
        per_rank.append((rank, extract(result, apis, wanted)))
    if not per_rank or not indexes or not any(v for _, d in per_rank for v in d.values()):
        raise InputError("Nothing to merge.", path=input_dir)
    if len(per_rank) == 1:
        log.info("Only one compare result gets merge data.")
    sheets = []
    for index in indexes:
        names: list[str] = []
        seen: set[str] = set()
        for _, data in per_rank:
            for name in data[index]:
                if name not in seen:
                    seen.add(name)
                    names.append(name)
        if len(per_rank) > 1:
            names.sort()
        rows = [[name, *(data[index].get(name) for _, data in per_rank)] for name in names]
        sheets.append((index, [C.NPU_NAME, *(f"rank{rank}" for rank, _ in per_rank)], rows))
    out_dir = Path(output_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True, mode=0o750)
    except OSError as exc:
        raise OutputError(f"cannot create output directory ({exc.strerror or exc})", path=out_dir) from None
    suffix = files[0][1][0].suffix  # every file is of one kind (result_files)
    host = run_host()  # the command's (msprobe merge_result); none when merge() is called on its own
    if host is not None:  # what killed runs left goes first (the default plugin sweep)
        host.pm.hook.msprobe_output_dirs_ready(directories=[out_dir])
    with run_stamp(out_dir, keep_earlier=False) as stamp:  # not the name another merge writes in this very second
        path = out_dir / f"multi_ranks_compare_merge_{stamp}{suffix}"
        if path.exists():
            log.warning("%s will be replaced.", path)
        (_write_csv if suffix == ".csv" else _write)(path, sheets)
    log.info("The compare results of the multi-ranks are merged and saved in: %s.", path.resolve())
    return path


def _cell(value: Any) -> Any:
    import math

    if isinstance(value, float):
        if value != value:
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def _write(path: Path, sheets: list[tuple[str, list[str], list[list[Any]]]]) -> None:
    from openpyxl import Workbook

    from msprobe_core.plugin import atomic_path

    wb = Workbook(write_only=True)
    for title, header, rows in sheets:
        ws = wb.create_sheet(_sheet_title(title))
        ws.append(header)
        for row in rows:
            ws.append([_cell(v) for v in row])
    try:
        with atomic_path(path) as tmp:
            wb.save(tmp)
    except OSError as exc:
        raise OutputError(f"cannot write merged result ({exc.strerror or exc})", path=path) from None


def _write_csv(path: Path, sheets: list[tuple[str, list[str], list[list[Any]]]]) -> None:
    """The sheets one after the other in one CSV: ``Compare Index``, then a sheet's columns."""
    from msprobe_core.plugin import atomic_path, csv_line, neutralise

    header = [INDEX_COLUMN, *sheets[0][1]] if sheets else [INDEX_COLUMN, C.NPU_NAME]
    try:
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(csv_line(header))
            for title, _, rows in sheets:
                for row in rows:
                    # a CSV result's cells are text; a name missing on a rank is an empty cell, as in the xlsx
                    fh.write(csv_line([title, *(neutralise("" if v is None else str(v)) for v in row)]))
    except OSError as exc:
        raise OutputError(f"cannot write merged result ({exc.strerror or exc})", path=path) from None


def _sheet_title(name: str) -> str:
    return re.sub(r"[\[\]:*?/\\]", "_", name)[:31]


@click.command("merge_result")
@click.option("-i", "--input_dir", required=True, type=click.Path(path_type=Path), help="Directory of per-rank results (xlsx, or CSV: then a merged CSV).")
@click.option("-o", "--output_dir", required=True, type=click.Path(path_type=Path), help="Where the merged workbook goes.")
@click.option("-config", "--config-path", "config_path", required=True, type=click.Path(path_type=Path),
              help="yaml with 'api' (prefixes) and optional 'compare_index'.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
def merge_result_cmd(input_dir: Path, output_dir: Path, config_path: Path, quiet: bool) -> None:
    """Merge chosen APIs' metrics of multi-rank results: one sheet per metric, one column per rank."""
    from msprobe_core.plugin import setup_logging

    setup_logging(quiet)
    merge(input_dir, output_dir, config_path)


@hookimpl
def msprobe_register_commands(register: Register[click.Command]) -> None:
    """``msprobe merge_result``: one workbook (or CSV) of chosen APIs' metrics across per-rank results."""
    register(merge_result_cmd)
