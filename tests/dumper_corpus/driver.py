"""Produce the dumper-version corpus of one mindstudio-probe release.

Usage (from anywhere; needs the throwaway venv /work/venvs/msp-VERSION, see README of
tests/data/dumpers):

    python tests/dumper_corpus/driver.py VERSION [--cases l1_stat,md5] [--work DIR] [--dest DIR]

For each case it writes one config per side, dumps target (faulty) and golden (clean) with that
release's own PrecisionDebugger (dump_side.py), then runs that release's own compare on the pair
(its CLI, or its Python ``compare`` for 1.0.1, which has no compare CLI) and records cmd.txt,
console.txt and the outputs, with the 14-digit timestamps removed from the file names
(renames.txt maps them back). Everything runs in WORK (default /work/venvs/runs/VERSION) and the
finished case folders are copied to DEST (default tests/data/dumpers/VERSION).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
VENVS = Path("/work/venvs")
TIMESTAMP = re.compile(r"_(\d{14})(?=[._])")


def vkey(version: str) -> tuple[int, ...]:
    """Numeric sort key of a release string ("26.1.0" -> (26, 1, 0))."""
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def cases_for(version: str) -> dict[str, dict]:
    """The cases dumped for a release: name -> (task, level, task section)."""
    stat: dict = {"scope": [], "list": [], "data_mode": ["all"]}
    cases = {
        "l1_stat": ("statistics", "L1", dict(stat)),
        "l0_stat": ("statistics", "L0", dict(stat)),
        "mix_stat": ("statistics", "mix", dict(stat)),
        "l1_md5": ("statistics", "L1", dict(stat, summary_mode="md5")),
        "l1_tensor": ("tensor", "L1", {"scope": [], "list": [], "data_mode": ["all"]}),
        # tiny_model.args_step: the uncommon argument leaves (slice, Ellipsis, dtype, device, Size, str,
        # float16/bfloat16/float64, NaN)
        "l1_args": ("statistics", "L1", dict(stat)),
    }
    if vkey(version) >= (26, 0, 0):
        cases["l1_xor"] = ("statistics", "L1", dict(stat, summary_mode="xor"))
    return {k: {"task": t, "level": lv, "section": s} for k, (t, lv, s) in cases.items()}


def run(cmd: list[str] | str, cwd: Path, log: Path, env: dict | None = None) -> tuple[int, float]:
    """Run a command, console (stdout+stderr) to log; returns (rc, wall seconds)."""
    t0 = time.time()
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                              shell=isinstance(cmd, str))
    return proc.returncode, time.time() - t0


def venv_env(version: str) -> dict:
    env = dict(os.environ)
    vbin = VENVS / f"msp-{version}" / "bin"
    env["PATH"] = f"{vbin}:{env['PATH']}"
    env["VIRTUAL_ENV"] = str(vbin.parent)
    env.pop("PYTHONPATH", None)
    env["PYTHONHASHSEED"] = "0"
    return env


def dump_case(version: str, case: str, spec: dict, cdir: Path) -> None:
    env = venv_env(version)
    for side in ("target", "golden"):
        cfg = {"task": spec["task"], "dump_path": str(cdir / side), "rank": [], "step": [],
               "level": spec["level"], spec["task"]: spec["section"]}
        cfg_path = cdir / f"config_{side}.json"
        cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
        shutil.rmtree(cdir / side, ignore_errors=True)
        extra = ["args"] if case == "l1_args" else []
        rc, wall = run(["python", str(HERE / "dump_side.py"), cfg_path.name, side, *extra], cdir,
                       cdir / f"dumplog_{side}.txt", env)
        with open(cdir / f"dumplog_{side}.txt", "a") as fh:
            fh.write(f"# rc={rc} wall={wall:.2f}s\n")
        stabilise_proc_dirs(cdir / side)


def stabilise_proc_dirs(side_root: Path) -> None:
    """Rename step*/proc<PID> to step*/proc0: msprobe pairs target/golden subfolders by name,
    and a PID differs per run. The 'proc' layout itself is kept."""
    for step in side_root.glob("step*"):
        for sub in step.glob("proc*"):
            if sub.name != "proc0":
                sub.rename(step / "proc0")


def rank_dir(side_root: Path) -> Path:
    hits = sorted(side_root.glob("step*/*/dump.json"))
    if not hits:
        hits = sorted(side_root.glob("**/dump.json"))
    return hits[0].parent if hits else side_root / "step0" / "rank"


def compare_variants(version: str, cdir: Path, case: str) -> dict[str, str]:
    """name -> shell command (cwd = case folder), per the release's own interface."""
    t_rank = rank_dir(cdir / "target").relative_to(cdir)
    g_rank = rank_dir(cdir / "golden").relative_to(cdir)
    v = vkey(version)
    out: dict[str, str] = {}
    if v >= (26, 0, 0):
        out["compare"] = (f"msprobe compare -tp target/{t_rank.parts[1]} -gp golden/{g_rank.parts[1]}"
                          " -o oracle/compare")
        if case == "l1_stat" or case == "l1_xor":
            out["compare_json"] = (f"msprobe compare -tp {t_rank}/dump.json -gp {g_rank}/dump.json"
                                   " -o oracle/compare_json")
        return out
    cj = {"npu_path": f"{t_rank}/dump.json", "bench_path": f"{g_rank}/dump.json",
          "stack_path": f"{t_rank}/stack.json", "is_print_compare_log": True}
    (cdir / "oracle").mkdir(exist_ok=True)
    if v <= (1, 0, 1):
        cj = {"npu_json_path": cj["npu_path"], "bench_json_path": cj["bench_path"],
              "stack_json_path": cj["stack_path"], "is_print_compare_log": True}
        (cdir / "oracle" / "compare_input.json").write_text(json.dumps(cj, indent=1) + "\n")
        out["pyapi"] = ("python -c \"import sys, json, typing, torch; torch.Any = typing.Any; "
                        "from msprobe.pytorch.compare.acc_compare import compare; "
                        "compare(json.load(open(sys.argv[1])), sys.argv[2], stack_mode=True)\" "
                        "oracle/compare_input.json oracle/pyapi")
        if case == "l1_stat":
            out["pyapi_dir"] = ("python -c \"import typing, torch; torch.Any = typing.Any; "
                                "from msprobe.pytorch.compare.distributed_compare import compare_distributed; "
                                f"compare_distributed('target/{t_rank.parts[1]}', 'golden/{g_rank.parts[1]}', "
                                "'oracle/pyapi_dir', stack_mode=True)\"")
        return out
    (cdir / "oracle" / "compare.json").write_text(json.dumps(cj, indent=1) + "\n")
    out["legacy"] = "msprobe -f pytorch compare -i oracle/compare.json -o oracle/legacy -s"
    if case == "l1_stat":
        # the folder form: how the release pairs the rank folder it wrote itself (step0/rank)
        dj = {"npu_path": f"target/{t_rank.parts[1]}", "bench_path": f"golden/{g_rank.parts[1]}",
              "is_print_compare_log": True}
        (cdir / "oracle" / "compare_dir.json").write_text(json.dumps(dj, indent=1) + "\n")
        out["legacy_dir"] = "msprobe -f pytorch compare -i oracle/compare_dir.json -o oracle/legacy_dir -s"
    return out


def run_compares(version: str, cdir: Path, case: str) -> None:
    env = venv_env(version)
    for name, cmd in compare_variants(version, cdir, case).items():
        odir = cdir / "oracle" / name
        shutil.rmtree(odir, ignore_errors=True)
        odir.mkdir(parents=True)
        rc, wall = run(cmd, cdir, odir / "console.txt", env)
        (odir / "cmd.txt").write_text(f"{cmd}\n# rc={rc} wall={wall:.2f}s\n")
        renames = []
        for f in sorted(odir.iterdir()):
            new = TIMESTAMP.sub("", f.name)
            if new != f.name:
                f.rename(odir / new)
                renames.append(f"{f.name} -> {new}")
        if renames:
            (odir / "renames.txt").write_text("\n".join(renames) + "\n")
        print(f"  {version} {case} {name}: rc={rc} {wall:.1f}s", flush=True)


def publish(cdir: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name in ("target", "golden", "oracle"):
        if (cdir / name).exists():
            shutil.copytree(cdir / name, dest / name)
    for f in cdir.glob("*.txt"):
        shutil.copy2(f, dest / f.name)
    for f in cdir.glob("config_*.json"):
        cfg = json.loads(f.read_text())
        cfg["dump_path"] = f.stem.split("_", 1)[1]
        (dest / f.name).write_text(json.dumps(cfg, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("version")
    ap.add_argument("--cases", default="")
    ap.add_argument("--work", default="")
    ap.add_argument("--dest", default="")
    ap.add_argument("--compare-only", action="store_true")
    args = ap.parse_args()
    work = Path(args.work or VENVS / "runs" / args.version)
    dest = Path(args.dest or REPO / "tests" / "data" / "dumpers" / args.version)
    cases = cases_for(args.version)
    wanted = [c for c in args.cases.split(",") if c] or list(cases)
    for case in wanted:
        cdir = work / case
        cdir.mkdir(parents=True, exist_ok=True)
        if not args.compare_only:
            dump_case(args.version, case, cases[case], cdir)
        run_compares(args.version, cdir, case)
        publish(cdir, dest / case)
    print(f"done {args.version}", file=sys.stderr)


if __name__ == "__main__":
    main()
