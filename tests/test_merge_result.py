"""``msprobe merge_result``: agreement with msprobe's merged workbooks (pytorch/c09a) and its validation errors."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import openpyxl
import pytest

from msprobe_core.cli.main import main
from msprobe_core.default_plugins.merge_result import merge

ORACLES = [("merge_result", "merge_config.yaml"), ("merge_result_all_index", "merge_config_all_index.yaml")]


def _sheets(path: Path) -> dict[str, list[list[str]]]:
    wb = openpyxl.load_workbook(path)
    return {
        ws.title: [["" if c is None else str(c) for c in row] for row in ws.iter_rows(values_only=True)]
        for ws in wb.worksheets
    }


def assert_same_workbook(oracle_diff, ours: Path, ref: Path) -> None:
    """Every sheet, header and cell agree (numbers within oracle_diff's tolerance)."""
    a, b = _sheets(ours), _sheets(ref)
    assert list(a) == list(b)
    for title in b:
        assert len(a[title]) == len(b[title]), title
        for ra, rb in zip(a[title], b[title]):
            assert len(ra) == len(rb), (title, ra, rb)
            for u, v in zip(ra, rb):
                assert oracle_diff.same(u, v, 1e-5, 1e-8), (title, ra[0], u, v)


def _merged(folder: Path) -> Path:
    files = list(folder.glob("multi_ranks_compare_merge_*.xlsx"))
    assert len(files) == 1, files
    return files[0]


@pytest.mark.parametrize("variant,config", ORACLES)
def test_merge_agrees_with_msprobe(corpora, oracle_diff, tmp_path, variant, config):
    case = corpora / "pytorch" / "c09a"
    rc = main(["merge_result", "-i", str(case / "oracle" / "compare_xlsx"), "-o", str(tmp_path),
               "-config", str(case / "oracle" / config)])
    assert rc == 0
    assert_same_workbook(oracle_diff, _merged(tmp_path), case / "oracle" / variant / "multi_ranks_compare_merge.xlsx")


def test_merge_needs_no_xlsx_plugin(corpora, oracle_diff, tmp_path, run_cli):
    """merge_result reads and writes its workbooks itself (openpyxl), not through the xlsx format: with the default
    plugin ``xlsx`` turned off it still merges msprobe's per-rank workbooks into msprobe's merged one."""
    case = corpora / "pytorch" / "c09a"
    for off, env in ((("-p", "no:xlsx"), {}), ((), {"MSPROBE_DISABLE_PLUGINS": "xlsx"})):
        out = tmp_path / f"off{len(off)}"
        proc = run_cli(*off, "merge_result", "-i", case / "oracle" / "compare_xlsx", "-o", out,
                       "-config", case / "oracle" / "merge_config.yaml", env=env)
        assert proc.returncode == 0, proc.stderr
        assert_same_workbook(oracle_diff, _merged(out), case / "oracle" / "merge_result" / "multi_ranks_compare_merge.xlsx")


@pytest.mark.parametrize("variant,config", ORACLES)
def test_merge_of_our_xlsx_results(corpora, oracle_diff, tmp_path, variant, config):
    """Our own ``compare --xlsx`` results merge to msprobe's merged workbook."""
    case = corpora / "pytorch" / "c09a"
    results = tmp_path / "results"
    assert main(["compare", "-tp", str(case / "target/step0"), "-gp", str(case / "golden/step0"),
                 "--xlsx", "-o", str(results)]) == 0
    out = tmp_path / "merged"
    assert main(["merge_result", "-i", str(results), "-o", str(out), "--config-path", str(case / "oracle" / config)]) == 0
    assert_same_workbook(oracle_diff, _merged(out), case / "oracle" / variant / "multi_ranks_compare_merge.xlsx")


def test_merge_of_classic_results(corpora, oracle_diff, tmp_path, monkeypatch):
    """The classic interface's multi-rank workbooks merge too (same statistics header)."""
    case = corpora / "pytorch" / "c09a"
    monkeypatch.chdir(corpora)
    cfg = tmp_path / "compare.json"
    cfg.write_text('{"npu_path": "pytorch/c09a/target/step0", "bench_path": "pytorch/c09a/golden/step0"}')
    results = tmp_path / "results"
    assert main(["-f", "pytorch", "compare", "-i", str(cfg), "-o", str(results), "-c"]) == 0
    out = tmp_path / "merged"
    assert main(["merge_result", "-i", str(results), "-o", str(out), "-config", str(case / "oracle/merge_config.yaml")]) == 0
    ours = _sheets(_merged(out))
    ref = _sheets(case / "oracle/merge_result/multi_ranks_compare_merge.xlsx")
    assert list(ours) == list(ref)
    for title in ref:
        assert [r[0] for r in ours[title]] == [r[0] for r in ref[title]]
        for ra, rb in zip(ours[title], ref[title]):
            for u, v in zip(ra, rb):
                # 8.3.3 leaves some cells uncomputed where 26.2.0 writes 0 (None arguments, bench 0) and
                # spells an exact relative error 0.0% (26.2.0: 0)
                same = oracle_diff.same(u.rstrip("%"), v.rstrip("%"), 1e-5, 1e-8)
                assert u.startswith("NPU:") or same, (title, ra[0], u, v)


@pytest.fixture()
def results(corpora, tmp_path) -> Path:
    folder = tmp_path / "in"
    shutil.copytree(corpora / "pytorch" / "c09a" / "oracle" / "compare_xlsx", folder)
    for p in folder.iterdir():
        if p.suffix != ".xlsx":
            p.unlink()
    return folder


def _config(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "config.yaml"
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "config.yaml is empty, please check."),
        ("compare_index: [Max diff]\n", "The APIs required to merge data were not found."),
        ("api: Distributed.all_reduce\n", "The config format of 'api' is incorrect, please check."),
        ("api: [Distributed.all_reduce]\ncompare_index: Max diff\n",
         "The config format of 'compare_index' is incorrect, please check."),
    ],
)
def test_config_errors(results, tmp_path, capsys, text, message):
    rc = main(["merge_result", "-i", str(results), "-o", str(tmp_path / "o"), "-config", str(_config(tmp_path, text))])
    assert rc != 0
    assert message in capsys.readouterr().err


def test_wrong_file_name_aborts(results, tmp_path, capsys):
    shutil.copy(next(results.glob("*.xlsx")), results / "debug_compare_result_rank0_20260101000000.xlsx")
    rc = main(["merge_result", "-i", str(results), "-o", str(tmp_path / "o"),
               "-config", str(_config(tmp_path, "api: [Distributed]\n"))])
    assert rc != 0
    assert "Wrong compare result name: debug_compare_result_rank0_20260101000000.xlsx" in capsys.readouterr().err


def test_a_result_file_given_for_the_folder_names_the_folder_to_give(results, tmp_path, capsys):
    one = next(results.glob("*.xlsx"))
    rc = main(["merge_result", "-i", str(one), "-o", str(tmp_path / "o"),
               "-config", str(_config(tmp_path, "api: [Distributed]\n"))])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{one}: is a file; -i takes the folder that holds the compare results (here: {results})" in err
    assert not (tmp_path / "o").exists()


def test_single_result_is_not_merged(results, tmp_path, capsys):
    for p in sorted(results.glob("*rank1_*.xlsx")):
        p.unlink()
    rc = main(["merge_result", "-i", str(results), "-o", str(tmp_path / "o"),
               "-config", str(_config(tmp_path, "api: [Distributed]\n"))])
    assert rc != 0
    assert "Number of compare result is no more than 1, no need to merge." in capsys.readouterr().err


def _csv_as_sheets(path: Path) -> dict[str, list[list[str]]]:
    """A merged CSV as the workbook's sheets: rows grouped by their ``Compare Index``, under the sheet header."""
    with open(path, newline="", encoding="utf-8") as fh:
        head, *rows = list(csv.reader(fh))
    assert head[0] == "Compare Index"
    sheets: dict[str, list[list[str]]] = {}
    for row in rows:
        sheets.setdefault(row[0], [head[1:]]).append(row[1:])
    return sheets


def assert_csv_like_workbook(oracle_diff, merged_csv: Path, workbook: Path) -> None:
    """The merged CSV holds the workbook's sheets, in order: same names, same rows, same values."""
    ours, ref = _csv_as_sheets(merged_csv), _sheets(workbook)
    assert list(ours) == list(ref)
    for title in ref:
        assert [r[0] for r in ours[title]] == [r[0] for r in ref[title]], title
        for ra, rb in zip(ours[title], ref[title]):
            assert len(ra) == len(rb), (title, ra, rb)
            for u, v in zip(ra, rb):
                assert oracle_diff.same(u.strip(), v, 1e-5, 1e-8), (title, ra[0], u, v)


@pytest.mark.parametrize("variant,config", ORACLES)
def test_csv_results_merge_to_the_xlsx_routes_cells(corpora, oracle_diff, tmp_path, variant, config):
    """compare's default (CSV) results merge, into a CSV holding the cells the xlsx route merges: our CSV results
    against our xlsx results of the same compare, and msprobe's own CSV results against its merged workbook."""
    case = corpora / "pytorch" / "c09a"
    cfg = str(case / "oracle" / config)
    for kind, extra in (("csv", []), ("xlsx", ["--xlsx"])):
        assert main(["compare", "-tp", str(case / "target/step0"), "-gp", str(case / "golden/step0"), *extra,
                     "-o", str(tmp_path / kind)]) == 0
        assert main(["merge_result", "-i", str(tmp_path / kind), "-o", str(tmp_path / f"merged_{kind}"),
                     "-config", cfg]) == 0
    merged_csv = next((tmp_path / "merged_csv").glob("multi_ranks_compare_merge_*.csv"))
    assert [p.suffix for p in (tmp_path / "merged_csv").iterdir()] == [".csv"]
    assert_csv_like_workbook(oracle_diff, merged_csv, _merged(tmp_path / "merged_xlsx"))
    # msprobe's own CSV results of this case (renamed without their timestamp) against msprobe's merged workbook
    assert main(["merge_result", "-i", str(case / "oracle" / "compare"), "-o", str(tmp_path / "merged_oracle"),
                 "-config", cfg]) == 0
    assert_csv_like_workbook(oracle_diff, next((tmp_path / "merged_oracle").glob("*.csv")),
                             case / "oracle" / variant / "multi_ranks_compare_merge.xlsx")


def test_a_csv_result_in_parts_is_merged_whole(corpora, tmp_path):
    """Past a million rows compare writes a rank's CSV as ``_part_N`` files: the merge reads every part."""
    case = corpora / "pytorch" / "c09a"
    whole, split = tmp_path / "whole", tmp_path / "split"
    shutil.copytree(case / "oracle" / "compare", whole)
    split.mkdir()
    for p in sorted(whole.glob("compare_result_rank*.csv")):
        with open(p, newline="", encoding="utf-8") as fh:
            head, *rows = list(csv.reader(fh))
        half = len(rows) // 2
        for n, chunk in ((1, rows[:half]), (2, rows[half:])):
            with open(split / f"{p.stem}_20260101000000_part_{n}.csv", "w", newline="", encoding="utf-8") as fh:
                csv.writer(fh, lineterminator="\n").writerows([head, *chunk])
    cfg = str(case / "oracle" / "merge_config_all_index.yaml")
    for folder in (whole, split):
        assert main(["merge_result", "-i", str(folder), "-o", str(tmp_path / f"m_{folder.name}"), "-config", cfg]) == 0
    merged = [next((tmp_path / f"m_{f}").glob("*.csv")).read_text(encoding="utf-8") for f in ("whole", "split")]
    assert merged[0] == merged[1] and merged[0].count("\n") > 20


def test_a_folder_of_both_kinds_merges_its_xlsx_and_says_so(results, corpora, tmp_path, capsys):
    for p in (corpora / "pytorch" / "c09a" / "oracle" / "compare").glob("*.csv"):
        shutil.copy(p, results / p.name)
    rc = main(["merge_result", "-i", str(results), "-o", str(tmp_path / "o"),
               "-config", str(_config(tmp_path, "api: [Distributed]\n"))])
    assert rc == 0
    assert "Merging the 2 xlsx results of" in capsys.readouterr().out
    assert [p.suffix for p in (tmp_path / "o").iterdir()] == [".xlsx"]


def test_one_result_of_each_kind_says_what_the_folder_holds(results, corpora, tmp_path, capsys):
    for p in sorted(results.glob("*rank1_*.xlsx")):
        p.unlink()
    shutil.copy(corpora / "pytorch" / "c09a" / "oracle" / "compare" / "compare_result_rank1.csv", results)
    rc = main(["merge_result", "-i", str(results), "-o", str(tmp_path / "o"),
               "-config", str(_config(tmp_path, "api: [Distributed]\n"))])
    err = capsys.readouterr().err
    assert rc == 2
    assert "The folder holds 1 xlsx and 1 CSV per-rank results" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_index_of_other_mode_and_nothing_to_merge(results, tmp_path, capsys):
    cfg = _config(tmp_path, "api: [Distributed.all_reduce]\ncompare_index: [Cosine]\n")
    rc = main(["merge_result", "-i", str(results), "-o", str(tmp_path / "o"), "-config", str(cfg)])
    captured = capsys.readouterr()
    assert rc != 0
    assert "Compare indexes in rank0 compare result are not consistent" in captured.out
    assert "Nothing to merge." in captured.err


def test_missing_api_is_a_warning(results, tmp_path, caplog):
    cfg = _config(tmp_path, "api: [Distributed.all_reduce, Functional.nonexistent]\ncompare_index: [Max diff]\n")
    caplog.set_level("WARNING", logger="msprobe")
    logger = __import__("logging").getLogger("msprobe")
    logger.propagate = True
    path = merge(results, tmp_path / "o", cfg)
    assert "Functional.nonexistent not found in rank0 compare result." in caplog.text
    rows = _sheets(path)["Max diff"]
    assert rows[0] == ["NPU Name", "rank0", "rank1"]
    assert [r[0] for r in rows[1:]] == sorted(r[0] for r in rows[1:])
    assert all(r[0].startswith("Distributed.all_reduce.") for r in rows[1:])


def test_not_computed_values_show_npu_and_bench_max(tmp_path):
    """N/A / unsupported / Nan cells become ``NPU:<NPU max>  Bench:<Bench max>``."""
    from openpyxl import Workbook

    head = ["NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
            "NPU Requires_grad", "Bench Requires_grad", "Max diff", "Min diff", "Mean diff", "L2norm diff",
            "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr", "NPU max", "NPU min",
            "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm",
            "Requires_grad Consistent", "Result", "Err_message"]
    folder = tmp_path / "in"
    folder.mkdir()
    for rank in (0, 1):
        wb = Workbook()
        ws = wb.active
        ws.append(head)
        row = ["Distributed.all_reduce.0.forward.output.0"] + ["x"] * 7 + ["N/A"] * 8 + ["N/A"] * 8 + [True, "", ""]
        ws.append(row)
        wb.save(folder / f"compare_result_rank{rank}_2026010100000{rank}.xlsx")
    path = merge(folder, tmp_path / "o", _config(tmp_path, "api: [Distributed.all_reduce]\ncompare_index: [Max diff]\n"))
    assert _sheets(path)["Max diff"][1] == ["Distributed.all_reduce.0.forward.output.0", "NPU:N/A  Bench:N/A",
                                            "NPU:N/A  Bench:N/A"]
