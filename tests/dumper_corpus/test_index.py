"""The dumper-version corpus is complete and its README index says what the folders hold."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import index  # noqa: E402

ROOT = index.ROOT
VERSIONS = sorted((p for p in ROOT.iterdir() if p.is_dir() and re.match(r"\d", p.name)),
                  key=lambda p: index.vkey(p.name)) if ROOT.is_dir() else []
CASE_DIRS = [c for v in VERSIONS for c in sorted(v.iterdir()) if c.is_dir()]


def test_readme_index_matches_folders() -> None:
    readme = (ROOT / "README.md").read_text()
    start = readme.index(index.BEGIN) + len(index.BEGIN)
    end = readme.index(index.END)
    assert readme[start:end].strip() == index.table(ROOT)


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_case_has_both_sides_and_a_recorded_oracle(case: Path) -> None:
    assert case.name in index.CASES
    for side in ("target", "golden"):
        dumps = list((case / side).glob("step*/*/dump.json"))
        assert len(dumps) == 1, f"{case}/{side}: {dumps}"
        data = json.loads(dumps[0].read_text())
        assert data["data"], f"{dumps[0]} has no entries"
        config = json.loads((case / f"config_{side}.json").read_text())
        assert config["task"] == data["task"]
    variants = [p for p in (case / "oracle").iterdir() if p.is_dir()]
    assert variants
    for var in variants:
        assert re.search(r"# rc=-?\d+", (var / "cmd.txt").read_text())
        assert (var / "console.txt").is_file()


@pytest.mark.parametrize(("key", "kept"), sorted(index.OMITTED.items()), ids=lambda x: str(x))
def test_omitted_cases_are_absent_and_their_twin_is_kept(key: tuple[str, str], kept: str) -> None:
    version, case = key
    assert not (ROOT / version / case).exists()
    assert (ROOT / kept / case / "oracle").is_dir()
