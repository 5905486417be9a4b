"""The Python examples of the documentation run, as written, against examples/.

Every fenced ``python`` block of the pages below runs, in page order, as one script (a later block may use what an
earlier one defined), from a scratch directory that sees the repository's ``examples/``; whatever a block writes
under ``output/`` lands there.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "docs" / "api.md"]


def python_blocks(page: Path) -> list[str]:
    """The page's ``python`` blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```$", page.read_text(encoding="utf-8"), flags=re.S | re.M)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_page_python_runs(page: Path, tmp_path: Path) -> None:
    blocks = python_blocks(page)
    assert blocks, f"{page.name} has no python block"
    (tmp_path / "examples").symlink_to(REPO / "examples")
    script = tmp_path / "page.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{page.relative_to(REPO)}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    assert list((tmp_path / "output").glob("api/compare_result_rank0_*.csv")) and (tmp_path / "output/api/report.html").is_file()
