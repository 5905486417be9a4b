"""What every generator of the independent-implementations corpus shares: the batch, the dumper's config,
one training step under the real msprobe dumper, and copying the dump into ``dumps/``.

Needs torch and mindstudio-probe (a throwaway venv, never a dependency of this project).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

DUMPS = Path(__file__).resolve().parent.parent / "dumps"
BATCH, SEQ = 2, 8


def batch(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and next-token labels, the same for both implementations of a pair."""
    g = torch.Generator().manual_seed(1234)
    ids = torch.randint(0, vocab, (BATCH, SEQ + 1), generator=g)
    return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()


def hf_checkpoint(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights as a Hugging Face checkpoint file holds them (``save_pretrained``, then read back)."""
    from safetensors.torch import load_file

    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        return load_file(str(Path(tmp) / "model.safetensors"))


def randomize(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Every parameter drawn anew (norm scales near 1, biases near 0, not their constant inits), so that each
    tensor is unique and the values show which converted tensor came from which."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if name.endswith("bias"):
                p.copy_(0.1 * noise)
            elif p.dim() == 1:  # norm scales
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.2 * noise)
    return model


def lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy computed outside both models, so neither library's own loss path is in the dump."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def _config(out: Path, level: str) -> Path:
    cfg = {"task": "statistics", "dump_path": str(out), "rank": [], "step": [], "level": level,
           "async_dump": False,
           "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}}
    path = out.parent / (out.name + ".json")
    path.write_text(json.dumps(cfg))
    return path


def dump_one_step(model: torch.nn.Module, logits_of: Callable[[torch.Tensor], torch.Tensor], vocab: int,
                  level: str, name: str) -> float:
    """One training step (forward, loss, backward, SGD step) dumped at ``level`` into ``dumps/NAME``."""
    from msprobe.pytorch import PrecisionDebugger

    ids, labels = batch(vocab)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        debugger = PrecisionDebugger(config_path=str(_config(out, level)))
        debugger.start(model)
        loss = lm_loss(logits_of(ids), labels)
        loss.backward()
        opt.step()
        debugger.stop()
        debugger.step()
        (proc,) = [p for p in (out / "step0").iterdir() if p.is_dir()]
        dest = DUMPS / name
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for f in ("dump.json", "construct.json", "stack.json"):
            shutil.copy(proc / f, dest / f)
    print(name, "loss", loss.item(), file=sys.stderr)
    return loss.item()
