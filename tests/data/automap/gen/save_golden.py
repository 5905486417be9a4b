"""``python save_golden.py OUT.npz``: the golden weights, token ids and labels, for the MindSpore twin (no torch there)."""

from __future__ import annotations

import sys

import numpy as np
from models import batch, golden_weights

ids, labels = batch()
np.savez(sys.argv[1], ids=ids.numpy(), labels=labels.numpy(), **{f"w:{k}": v for k, v in golden_weights().items()})
