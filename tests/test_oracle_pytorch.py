"""Differential tests: our compare of every PyTorch corpus case against msprobe 26.2.0's own output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from msprobe_core.cli.main import main

from .conftest import agree, corpora_dir

TIMESTAMP = re.compile(r"_\d{14}")
CASES = ["c01", "c02", "c03", "c04a", "c05", "c06b", "c08", "c09a"]


def _strip_ts(name: str) -> str:
    return TIMESTAMP.sub("", name)


def _oracle_files(oracle: Path, suffix: str) -> dict[str, Path]:
    return {_strip_ts(p.name): p for p in oracle.glob(f"*{suffix}")}


def _variants():
    root = corpora_dir() / "pytorch"
    for case in CASES:
        for variant, args, suffix in (
            ("compare", ["-tp", "target/step0", "-gp", "golden/step0"], ".csv"),
            ("compare_xlsx", ["-tp", "target/step0", "-gp", "golden/step0", "--xlsx"], ".xlsx"),
            (
                "compare_json",
                ["-tp", "target/step0/rank0/dump.json", "-gp", "golden/step0/rank0/dump.json"],
                ".csv",
            ),
        ):
            if (root / case / "oracle" / variant).is_dir():
                yield pytest.param(case, variant, args, suffix, id=f"{case}-{variant}")


@pytest.mark.parametrize("case,variant,args,suffix", list(_variants()))
def test_agrees_with_msprobe(corpora, oracle_diff, tmp_path, case, variant, args, suffix):
    root = corpora / "pytorch" / case
    full = [a if not a.startswith(("target", "golden")) else str(root / a) for a in args]
    rc = main(["compare", *full, "-o", str(tmp_path)])
    assert rc == 0
    ours = _oracle_files(tmp_path, suffix)
    refs = _oracle_files(root / "oracle" / variant, suffix)
    assert refs, "oracle has no result files"
    assert sorted(ours) == sorted(refs)
    for name, ref in refs.items():
        code, report = agree(oracle_diff, ours[name], ref)
        assert code == 0, f"{case}/{variant}/{name} disagrees:\n{report}"
