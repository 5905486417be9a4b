"""Every documented command of one framework works where only msprobe-core and that framework's plugin are installed.

The commands are those of ``tests/test_docs_commands.py`` (every fenced ``msprobe …`` line of ``docs/**/*.md`` and
``README.md``), run with the ``msprobe`` script of a real venv holding msprobe-core and one plugin
(``tests/selective_venv.py``). A command belongs to a framework when every dump it names (a ``dump.json`` or
``debug.json``, or a directory holding them) is of that framework; a command naming no dump (``msprobe report``,
``msprobe merge_result``, ``msprobe plugins``) runs when what it reads under ``output/`` was written by a command
that ran before it on its page. Commands for another plugin (kernel dumps, the classic command line, the example
plugin) are left out. Each must exit as documented and write what its options ask for.
"""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from pathlib import Path

import pytest

from .test_docs_commands import PAGES, REPO, Command, _redirect, extract

#: the sub-commands of the core (anything else is a plugin's command line or sub-command)
CORE_COMMANDS = ("compare", "report", "merge_result", "plugins")


@cache
def _frameworks_of(token: str) -> frozenset[str] | None:
    """The frameworks of the dumps a path names (``None``: no path of the repository, or a file that is no dump;
    ``{"?"}``: a directory holding no ``dump.json``/``debug.json``, a layout of another plugin)."""
    if token.startswith("-") or token.startswith("output") or not (REPO / token).exists():
        return None
    path = REPO / token
    files = [path] if path.is_file() else sorted([*path.rglob("dump.json"), *path.rglob("debug.json")])
    found = set()
    for file in files:
        try:
            doc = json.loads(file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and "data" in doc:
            found.add(doc.get("framework") or "pytorch")  # dumps that name none are PyTorch's (the default)
    if path.is_file():
        return frozenset(found) or None
    return frozenset(found) or frozenset({"?"})


def _output_dir(cmd: Command) -> str | None:
    for flag, value in zip(cmd.argv, cmd.argv[1:]):
        if flag in ("-o", "--output_path"):
            return value
    return None


def commands_for(framework: str) -> list[Command]:
    """The documented commands that need no plugin but ``framework``'s, page by page, in page order."""
    chosen = []
    for page in PAGES:
        written: list[str] = []
        for cmd in extract(page)[0]:
            if cmd.needs or cmd.skip or cmd.pending or not cmd.argv or cmd.argv[0] not in CORE_COMMANDS:
                continue
            frameworks = set().union(*(f for t in cmd.argv[1:] if (f := _frameworks_of(t)) is not None))
            own = _output_dir(cmd)
            if frameworks:
                if frameworks != {framework}:
                    continue
            else:
                reads = [t for t in cmd.argv if t.startswith("output/") and t != own]
                if not all(any(t == w or t.startswith(w.rstrip("/") + "/") for w in written) for t in reads):
                    continue
            chosen.append(cmd)
            if own:
                written.append(own)
    return chosen


def _run(script: Path, cmd: Command, out: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(cmd.env)
    return subprocess.run([str(script), *_redirect(cmd.argv, out)], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=600)


def _missing_outputs(cmd: Command, out: Path) -> list[str]:
    """What the command's options ask it to write and is not there."""
    argv = _redirect(cmd.argv, out)
    target = _output_dir(Command(cmd.page, cmd.line, cmd.text, argv))
    missing = []
    wanted: list[tuple[str, str]] = []
    if cmd.exit_code != 0:  # a documented refusal writes no result
        return missing
    if argv[0] == "compare":
        wanted.append(("*compare_result_*", "a result"))  # debug_compare_result_* for debug.json
        if "-da" in argv:
            wanted.append(("diff_analyze_*.json", "the -da analysis"))
        if "--report" in argv:
            wanted.append(("*.html", "the HTML report"))
        if "--xlsx" in argv:
            wanted.append(("*.xlsx", "an xlsx result"))
    elif argv[0] in ("merge_result",):
        wanted.append(("*", "the merged tables"))
    if target and wanted:
        for pattern, what in wanted:
            if not list(Path(target).rglob(pattern)):
                missing.append(f"{what} ({pattern} under {target})")
    elif target and argv[0] == "report" and not Path(target).is_file():
        missing.append(f"the report {target}")
    if "--json-summary" in argv and not Path(argv[argv.index("--json-summary") + 1]).is_file():
        missing.append("the JSON summary")
    return missing


def _check_all(script: Path, framework: str, tmp_path: Path) -> list[Command]:
    commands = commands_for(framework)
    out = tmp_path / "output"
    failures = []
    for cmd in commands:
        proc = _run(script, cmd, out)
        where = f"{cmd.page.relative_to(REPO)}:{cmd.line}: msprobe {' '.join(cmd.argv)}"
        if proc.returncode != cmd.exit_code or "Traceback" in proc.stderr or "internal error" in proc.stderr:
            failures.append(f"{where}\n  exit {proc.returncode} (documented: {cmd.exit_code})\n  {proc.stderr[-800:]}")
            continue
        missing = _missing_outputs(cmd, out)
        if missing:
            failures.append(f"{where}\n  did not write {', '.join(missing)}")
    assert not failures, f"with msprobe-core and the {framework} plugin only:\n" + "\n".join(failures)
    return commands


def test_the_selection_sees_each_kind_of_command():
    pytorch = [" ".join(c.argv) for c in commands_for("pytorch")]
    assert any("-da" in c and "pytorch_multirank" in c for c in pytorch)  # -da on a multi-rank pair
    assert any(c.startswith("report ") for c in pytorch) and any(c.startswith("merge_result ") for c in pytorch)
    assert "plugins" in pytorch
    assert not any("mindspore" in c or "cross_framework" in c or "classic" in c for c in pytorch)
    mindspore = [" ".join(c.argv) for c in commands_for("mindspore")]
    assert mindspore and all(("mindspore_" in c or "/mindspore/" in c) and "kernel" not in c
                             for c in mindspore if c.startswith("compare"))


def test_every_documented_pytorch_command_works_with_the_core_and_msprobe_pytorch_only(core_and_pytorch, tmp_path):
    ran = _check_all(core_and_pytorch, "pytorch", tmp_path)
    assert len(ran) >= 20


def test_every_documented_mindspore_command_works_with_the_core_and_msprobe_mindspore_only(core_and_mindspore,
                                                                                           tmp_path):
    ran = _check_all(core_and_mindspore, "mindspore", tmp_path)
    assert len(ran) >= 4


@pytest.mark.parametrize("framework", ["pytorch", "mindspore"])
def test_a_multi_rank_first_divergence_analysis_works_with_one_framework_plugin(framework, request, tmp_path):
    """-da on a two-rank pair of the framework (the multi-rank examples are PyTorch's: this one is written here)."""
    script = request.getfixturevalue(f"core_and_{framework}")
    dtype, api = ("torch.float32", "Functional.linear") if framework == "pytorch" else ("Float32", "Mint.nn.functional.linear")
    for side in ("target", "golden"):
        for rank in (0, 1):
            bad = side == "target" and rank == 1
            leaf = {"type": "tensor", "dtype": dtype, "shape": [2], "Max": 9.0 if bad else 1.0, "Min": 0.0,
                    "Mean": 0.5, "Norm": 1.0, "requires_grad": False}
            doc = {"task": "statistics", "level": "L1", "framework": framework, "dump_data_dir": None,
                   "data": {f"{api}.0.forward": {"input_args": [dict(leaf, Max=1.0)], "input_kwargs": {},
                                                 "output": [leaf]}}}
            rank_dir = tmp_path / side / "step0" / f"rank{rank}"
            rank_dir.mkdir(parents=True)
            (rank_dir / "dump.json").write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "out"
    cmd = Command(REPO / "README.md", 0, "", ["compare", "-tp", str(tmp_path / "target/step0"),
                                               "-gp", str(tmp_path / "golden/step0"), "-o", str(out), "-da"])
    proc = _run(script, cmd, out)
    assert proc.returncode == 0, proc.stderr
    (analysis,) = out.glob("diff_analyze_*.json")
    doc = json.loads(analysis.read_text(encoding="utf-8"))
    assert [(n["op_name"], n["role"]) for n in doc["rank_1"]][:1] == [(f"{api}.0.forward", "cause")]
