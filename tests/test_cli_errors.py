"""Input that stops a run: one-line error naming the file, non-zero exit, no result file, no traceback."""

from __future__ import annotations

import json

import pytest

from .dumps import api, tensor, write_dump

GOOD = {"Torch.a.0.forward": api([tensor()], [tensor()])}


def _assert_clean_failure(proc, out_dir, fragment, code=2):
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    err_lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(err_lines) == 1, proc.stderr
    assert fragment in err_lines[0], err_lines[0]
    assert not list(out_dir.rglob("*.csv")) and not list(out_dir.rglob("*.xlsx"))
    assert not list(out_dir.rglob("*.part"))


@pytest.mark.parametrize(
    "content,fragment",
    [
        ('{"task": "statistics", "data": {"Torch.a.0.forward": {', "malformed JSON at line 1"),
        ("", "empty"),
        ("[1, 2]", "top level must be a JSON object"),
        ('{"data": {}}', "'task' is missing"),
        ('{"task": "statistics"}', "'data' is missing"),
        ('{"task": "statistics", "data": []}', "'data' must be a JSON object"),
        ('{"task": "structure", "data": {}}', "task 'structure' cannot be compared"),
        ('{"task": "statistics", "data": {"Torch.a.0.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": 5}]}}}',
         "'shape' of Torch.a.0.forward.input.0 must be a list"),
    ],
)
def test_bad_dump_json(tmp_path, run_cli, content, fragment):
    bad = tmp_path / "t" / "dump.json"
    bad.parent.mkdir()
    bad.write_text(content)
    good = write_dump(tmp_path / "g", GOOD)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", bad, "-gp", good, "-o", out)
    _assert_clean_failure(proc, out, fragment)
    assert str(bad) in proc.stderr


def test_missing_path(tmp_path, run_cli):
    good = write_dump(tmp_path / "g", GOOD)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", tmp_path / "nope" / "dump.json", "-gp", good, "-o", out)
    _assert_clean_failure(proc, out, "does not exist")


def test_file_vs_directory(tmp_path, run_cli):
    good = write_dump(tmp_path / "g", GOOD)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", tmp_path / "g", "-gp", good, "-o", out)
    _assert_clean_failure(proc, out, "both be files or both be directories")


def test_tasks_differ(tmp_path, run_cli):
    t = write_dump(tmp_path / "t", GOOD, task="tensor")
    g = write_dump(tmp_path / "g", GOOD)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", out)
    _assert_clean_failure(proc, out, "dump tasks differ")


def test_md5_vs_statistics(tmp_path, run_cli):
    t = write_dump(tmp_path / "t", {"Torch.a.0.forward": api([tensor(md5="12345678")])})
    g = write_dump(tmp_path / "g", GOOD)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", out)
    _assert_clean_failure(proc, out, "both must be statistics or both md5")


def test_dump_and_debug_json_cannot_mix(tmp_path, run_cli):
    t = write_dump(tmp_path / "t", GOOD, name="debug.json")
    g = write_dump(tmp_path / "g", GOOD)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", out)
    _assert_clean_failure(proc, out, "dump.json or both with debug.json")


def test_rank_counts_differ(tmp_path, run_cli):
    for r in ("rank0", "rank1"):
        write_dump(tmp_path / "t" / "step0" / r, GOOD)
    write_dump(tmp_path / "g" / "step0" / "rank0", GOOD)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", tmp_path / "t" / "step0", "-gp", tmp_path / "g" / "step0", "-o", out)
    _assert_clean_failure(proc, out, "different numbers of ranks")


def test_dump_root_against_a_step_dir(tmp_path, run_cli):
    """Two dump roots compare step by step (tests/test_step_roots.py); a root against one step directory is a
    mistake, refused in one line."""
    write_dump(tmp_path / "t" / "step0" / "rank0", GOOD)
    write_dump(tmp_path / "g" / "step0" / "rank0", GOOD)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g" / "step0", "-o", out)
    _assert_clean_failure(proc, out, "holds step directories (step0) but -gp")


def test_unknown_framework(tmp_path, run_cli):
    t = write_dump(tmp_path / "t", GOOD, framework="jax")
    g = write_dump(tmp_path / "g", GOOD, framework="jax")
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", out)
    _assert_clean_failure(proc, out, "framework 'jax' is not handled")


def test_unknown_option_is_a_usage_error(tmp_path, run_cli):
    proc = run_cli("compare", "-tp", "a", "-gp", "b", "-fr")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "-fr" in proc.stderr


def test_failing_rank_does_not_stop_others_but_fails_the_run(tmp_path, run_cli):
    for side in ("t", "g"):
        write_dump(tmp_path / side / "step0" / "rank0", GOOD)
        (tmp_path / side / "step0" / "rank1").mkdir(parents=True)
    (tmp_path / "t" / "step0" / "rank1" / "dump.json").write_text(json.dumps({"task": "statistics", "data": {}}))
    (tmp_path / "g" / "step0" / "rank1" / "dump.json").write_text("{broken")
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", tmp_path / "t" / "step0", "-gp", tmp_path / "g" / "step0", "-o", out)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert [p.name.split("_2")[0] for p in out.glob("*.csv")] == ["compare_result_rank0"]
    assert "rank1" in proc.stderr and "1 of 2 compares failed" in proc.stderr


def test_missing_default_framework_field_warns(tmp_path, run_cli):
    t = write_dump(tmp_path / "t", GOOD, framework=None)
    g = write_dump(tmp_path / "g", GOOD, framework=None)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", t, "-gp", g, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "default setting is pytorch" in proc.stdout
    assert len(list(out.glob("compare_result_*.csv"))) == 1


def test_debug_flag_shows_traceback(tmp_path, run_cli):
    g = write_dump(tmp_path / "g", GOOD)
    proc = run_cli("--debug", "compare", "-tp", tmp_path / "missing.json", "-gp", g, "-o", tmp_path / "o")
    assert proc.returncode != 0 and "Traceback" in proc.stderr


# --------------------------------------------------------------------------- errors that teach (issue 23, item 6)
@pytest.mark.parametrize(
    "typed,meant",
    [
        ("--fuzy_match", "--fuzzy_match"),
        ("--fuzzy-match", "--fuzzy_match"),
        ("-fmm", "-fm"),
        ("-tpp", "-tp"),
        ("--xls", "--xlsx"),
        ("-fuzzy_match", "--fuzzy_match"),
    ],
)
def test_a_mistyped_option_gets_the_closest_declared_one(tmp_path, run_cli, typed, meant):
    good = write_dump(tmp_path / "g", GOOD)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", good, "-gp", good, typed, "-o", out)
    _assert_clean_failure(proc, out, f"no such option '{typed}'. Did you mean '{meant}'?")


def test_an_option_like_none_gets_no_suggestion(tmp_path, run_cli):
    proc = run_cli("compare", "-tp", "a", "-gp", "b", "--entirely_unrelated")
    _assert_clean_failure(proc, tmp_path, "no such option '--entirely_unrelated'")
    assert "Did you mean" not in proc.stderr


def test_merge_result_typo_gets_a_suggestion(tmp_path, run_cli):
    proc = run_cli("merge_result", "-i", tmp_path, "-o", tmp_path / "o", "-confg", "c.yaml")
    _assert_clean_failure(proc, tmp_path, "Did you mean '-config'?")


@pytest.mark.parametrize("swap", [False, True])
def test_file_vs_directory_says_which_is_which(tmp_path, run_cli, swap):
    good = write_dump(tmp_path / "g", GOOD)
    out = tmp_path / "out"
    tp, gp = (good, tmp_path / "g") if swap else (tmp_path / "g", good)
    proc = run_cli("compare", "-tp", tp, "-gp", gp, "-o", out)
    _assert_clean_failure(proc, out, f"-tp {tp} is {'a file' if swap else 'a directory'}, "
                                     f"-gp {gp} is {'a directory' if swap else 'a file'}")


def test_an_empty_object_as_a_dump_names_every_missing_key(tmp_path, run_cli):
    bad = tmp_path / "t" / "dump.json"
    bad.parent.mkdir()
    bad.write_text("{}")
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", bad, "-gp", write_dump(tmp_path / "g", GOOD), "-o", out)
    _assert_clean_failure(proc, out, f"{bad}: keys 'task' and 'data' are missing at the top level")


def test_every_problem_of_a_header_is_listed(tmp_path, run_cli):
    bad = tmp_path / "t" / "dump.json"
    bad.parent.mkdir()
    bad.write_text('{"task": 3, "level": 1}')
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", bad, "-gp", write_dump(tmp_path / "g", GOOD), "-o", out)
    _assert_clean_failure(proc, out, "$.task: input should be a valid string (got number 3); "
                                     "$.level: input should be a valid string (got number 1); "
                                     "key 'data' is missing at the top level")


@pytest.mark.parametrize("ranks_on", ["-tp", "-gp"])
def test_rank_dirs_against_a_proc_dir_says_so(tmp_path, run_cli, ranks_on):
    for r in ("rank0", "rank1"):
        write_dump(tmp_path / "ranked" / "step0" / r, GOOD)
    write_dump(tmp_path / "procs" / "step0" / "proc12983", GOOD, framework="mindspore")
    ranked, procs = tmp_path / "ranked" / "step0", tmp_path / "procs" / "step0"
    tp, gp = (ranked, procs) if ranks_on == "-tp" else (procs, ranked)
    out = tmp_path / "out"
    proc = run_cli("compare", "-tp", tp, "-gp", gp, "-o", out)
    other = "-gp" if ranks_on == "-tp" else "-tp"
    _assert_clean_failure(proc, out, f"{ranks_on} {ranked} holds rank directories (rank0, rank1: one per rank) but "
                                     f"{other} {procs} holds proc<PID> directories (proc12983: one per process)")
    assert "0 in" not in proc.stderr
