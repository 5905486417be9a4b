"""Build ``tests/data/corpus``, the compact in-repository corpus, from the shared corpora.

Run once by a maintainer who has the shared folder (``python scripts/build_minicorpus.py SHARED/corpora``).
One small case per scenario, laid out exactly as the shared corpora; a case's ``target/`` and ``golden/``
become relative symlinks into ``examples/`` where that example holds the same dumps byte for byte
(checked here), else they are copied. Only the oracle variants listed below are kept, to stay small.
The kernel case is not built here (its oracle was made by running msprobe): see ``tests/data/corpus/README.md``.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "corpus"

#: case -> (the example holding its dumps, or None to copy them; the oracle variants kept)
CASES: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "pytorch/c01": ("pytorch_stats", ("compare", "compare_xlsx", "compare_json", "legacy_cli", "legacy_compare.json")),
    "pytorch/c03": (None, ("compare", "compare_xlsx")),
    "pytorch/c04a": (None, ("compare", "compare_xlsx")),
    "pytorch/c05": (None, ("compare",)),
    "pytorch/c06b": ("pytorch_tensor", ("compare",)),
    "pytorch/c08": ("pytorch_fuzzy", ("compare", "compare_fm")),
    "pytorch/c09a": ("pytorch_multirank", ("compare", "compare_xlsx", "compare_da", "merge_result", "merge_result_all_index",
                                           "merge_config.yaml", "merge_config_all_index.yaml")),
    "pytorch/c11": ("pytorch_debug", ("compare_step0", "compare_step1", "compare_json_step0", "compare_xlsx_step0")),
    "mindspore/ms_l1_stat_fp16": ("mindspore_api", ("default",)),
    "mindspore/ms_l0_stat_bug_2steps": ("mindspore_cell", ("step0", "step1")),
    "mindspore/ms_mix_stat_gelu": (None, ("default",)),
    "mindspore/x_l1_stat_am": ("cross_framework/api", ("am_builtin", "am_yaml", "am_yaml_docformat", "no_mapping")),
    "mindspore/x_l0_stat_cm_bug": ("cross_framework/cell", ("cm_builtin", "cm_yaml")),
    "mindspore/x_mix_stat_dm_bug": ("cross_framework/data", ("dm_yaml",)),
    "mindspore/x_l0_tensor_lm": ("cross_framework/layer", ("lm_yaml",)),
}

#: classic-interface (msprobe 8.3.3) variants kept; their compare.json name the cases above
LEGACY = (
    "c01/plain", "c01/hl", "c01/s", "c01/api_compare_defaults", "c03/plain", "c08/f_hl", "c08/dm_hl",
    "c09a/dir_plain", "c11/file_plain", "ms_l1_stat_fp16/plain", "x_l1_stat_am/am_hl",
    "x_l0_stat_cm_bug/cm_hl", "x_mix_stat_dm_bug/dm_yaml_hl", "x_l0_tensor_lm/lm_yaml_hl",
)


def _same_tree(a: Path, b: Path) -> bool:
    """True when the two folders hold the same files with the same bytes."""
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


def build(corpora: Path) -> None:
    """Lay out :data:`OUT` from ``corpora`` (the shared ``corpora/`` folder)."""
    # the kernel case (made by running msprobe, see the README) is not rebuilt, so it stays
    for case in (*CASES, "legacy"):
        shutil.rmtree(OUT / case, ignore_errors=True)
    for case, (example, variants) in CASES.items():
        src, dst = corpora / case, OUT / case
        dst.mkdir(parents=True)
        for item in src.iterdir():
            if item.name in ("target", "golden", "oracle"):
                continue
            shutil.copy2(item, dst / item.name)  # mapping yamls, *_config.json
        for side in ("target", "golden"):
            if example and _same_tree(src / side, REPO / "examples" / example / side):
                os.symlink(os.path.relpath(REPO / "examples" / example / side, dst), dst / side)
            else:
                shutil.copytree(src / side, dst / side)
        (dst / "oracle").mkdir()
        if (src / "oracle" / "cmd.txt").is_file():
            shutil.copy2(src / "oracle" / "cmd.txt", dst / "oracle" / "cmd.txt")
        for v in variants:
            item = src / "oracle" / v
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, dst / "oracle" / v)
    for rel in LEGACY:
        shutil.copytree(corpora / "legacy" / rel, OUT / "legacy" / rel)
    # every oracle variant of the shared corpora: the tests count those a fresh clone lacks
    variants = [p for p in corpora.glob("*/*/oracle/*") if p.is_dir()] + list(corpora.glob("legacy/*/*"))
    (OUT / "shared_manifest.txt").write_text(
        "".join(f"{p.relative_to(corpora)}\n" for p in sorted(variants)), encoding="utf-8")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "corpora")
