"""Shared by gen_ms.py and gen_pt.py: sizes, weights, data and the msprobe dump config of the two twin models."""

from __future__ import annotations

import json

import numpy as np

VOCAB, DIM, HIDDEN, CLASSES, BATCH, SEQ = 50, 24, 48, 7, 3, 6


def weights(model: str) -> dict[str, np.ndarray]:
    """The parameters of ``model`` (``mlp`` or ``conv``), by the attribute path both frameworks use."""
    r = np.random.RandomState(7)
    if model == "mlp":
        w = {"embed.weight": r.randn(VOCAB, DIM) * 0.5}
        for blk in ("blocks.0", "blocks.1"):
            w[f"{blk}.norm.gamma"] = 1 + 0.1 * r.randn(DIM)
            w[f"{blk}.norm.beta"] = 0.1 * r.randn(DIM)
            w[f"{blk}.fc1.weight"] = r.randn(HIDDEN, DIM) / np.sqrt(DIM)
            w[f"{blk}.fc1.bias"] = 0.1 * r.randn(HIDDEN)
            w[f"{blk}.fc2.weight"] = r.randn(DIM, HIDDEN) / np.sqrt(HIDDEN)
            w[f"{blk}.fc2.bias"] = 0.1 * r.randn(DIM)
        w["norm_f.gamma"] = 1 + 0.1 * r.randn(DIM)
        w["norm_f.beta"] = 0.1 * r.randn(DIM)
        w["head.weight"] = r.randn(CLASSES, DIM) / np.sqrt(DIM)
        w["head.bias"] = 0.1 * r.randn(CLASSES)
    else:
        w = {
            "conv1.weight": r.randn(8, 3, 3, 3) / np.sqrt(27),
            "conv1.bias": 0.1 * r.randn(8),
            "conv2.weight": r.randn(12, 8, 3, 3) / np.sqrt(72),
            "conv2.bias": 0.1 * r.randn(12),
            "fc.weight": r.randn(CLASSES, 12) / np.sqrt(12),
            "fc.bias": 0.1 * r.randn(CLASSES),
        }
    return {k: v.astype(np.float32) for k, v in w.items()}


def batch(model: str) -> tuple[np.ndarray, np.ndarray]:
    """(input, labels): token ids for ``mlp``, a 3×8×8 image batch for ``conv``."""
    r = np.random.RandomState(11)
    if model == "mlp":
        return r.randint(0, VOCAB, size=(BATCH, SEQ)), r.randint(0, CLASSES, size=(BATCH * SEQ,))
    return r.randn(BATCH, 3, 8, 8).astype(np.float32), r.randint(0, CLASSES, size=(BATCH,))


def write_config(dump_path: str, task: str, level: str) -> str:
    """Write the msprobe dump config for one run next to ``dump_path``; returns its path."""
    section = {"scope": [], "list": [], "data_mode": ["all"]}
    if task == "statistics":
        section["summary_mode"] = "statistics"
    cfg = {"task": task, "dump_path": dump_path, "rank": [], "step": [], "level": level, "async_dump": False,
           task: section}
    path = dump_path + ".json"
    with open(path, "w") as fh:
        json.dump(cfg, fh)
    return path
