"""Llama on two frameworks: Hugging Face ``LlamaForCausalLM`` on PyTorch (golden) and mindformers'
``LlamaForCausalLM`` on MindSpore in PyNative mode (target), the weights converted by mindformers' own
``convert_pt_to_ms`` from the golden's saved checkpoint.

Two venvs (mindformers pins ``numpy<2`` and ``transformers==4.57.1``, the other pairs' venv has numpy 2 and
transformers 5): the golden side runs where the other pairs' golden sides run, the target side in a venv with
MindSpore; README.md says how to make it. The checkpoint passes between them through a folder
(``MSLLAMA_CKPT``, default ``/tmp/msllama_hf``):

``python msllama.py hf LEVEL`` (PyTorch venv) writes the checkpoint and ``dumps/msllama_hf_<LEVEL>``;
``python msllama.py mf|mf_fault LEVEL`` (MindSpore venv) converts it and writes ``dumps/msllama_<side>_<LEVEL>``;
``python msllama.py check`` and ``python msllama.py modules`` (writes ``../msllama.modules.json``) run in the
MindSpore venv too. The fault: layer 1's
``ffn_norm`` (RMSNorm) eps 1e-6 → 0.1.

MindSpore's CPU build has no kernel for the norm msprobe's MindSpore dumper computes each tensor's Norm with
(``LinalgVectorNorm unregistered``); the dumper's statistics module is handed one that computes the same
value from kernels the CPU build has (square, sum, square root). Every other field is the dumper's own.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

VOCAB, DIM, HEADS, KV_HEADS, LAYERS, FFN, MAX_SEQ = 64, 32, 4, 2, 2, 64, 64
EPS, THETA = 1e-6, 10000.0
FAULT_MODULE = "model.layers.1.ffn_norm"
FAULT_EPS = 0.1
CKPT = Path(os.environ.get("MSLLAMA_CKPT", "/tmp/msllama_hf"))
DUMPS = Path(__file__).resolve().parent.parent / "dumps"
#: the dumper's files this pair keeps (stack.json is left out: the corpus stays small)
KEEP = ("dump.json", "construct.json")


def hf_side(level: str) -> None:
    """The golden: Hugging Face's Llama, random weights saved as a checkpoint, one training step dumped."""
    import torch
    from common import dump_one_step, randomize
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=DIM, intermediate_size=FFN, num_hidden_layers=LAYERS,
                      num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=MAX_SEQ,
                      rms_norm_eps=EPS, rope_theta=THETA, tie_word_embeddings=False, attention_dropout=0.0)
    cfg._attn_implementation = "sdpa"
    hf = randomize(LlamaForCausalLM(cfg)).eval()
    shutil.rmtree(CKPT, ignore_errors=True)
    hf.save_pretrained(CKPT)
    dump_one_step(hf, lambda ids: hf(input_ids=ids).logits, VOCAB, level, f"msllama_hf_{level}")
    for f in DUMPS.glob(f"msllama_hf_{level}/stack.json"):
        f.unlink()


def mf_model(fault: bool = False):  # noqa: ANN201 - a mindformers model
    """mindformers' Llama (float32 throughout) holding the checkpoint as its own converter converts it."""
    import mindspore as ms
    from mindformers.models.llama import LlamaConfig, LlamaForCausalLM
    from mindformers.models.llama.convert_weight import convert_pt_to_ms

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = str(Path(tmp) / "llama.ckpt")
        convert_pt_to_ms(str(CKPT), ckpt, dtype=ms.float32)
        params = ms.load_checkpoint(ckpt)
    # use_rope_slice: the other rotary form multiplies by a swap matrix with a broadcast BatchMatMul, which
    # MindSpore's CPU build refuses; fused_rms_norm: the fused RmsNorm kernel is not in the CPU build either
    cfg = LlamaConfig(batch_size=2, seq_length=8, hidden_size=DIM, num_layers=LAYERS, num_heads=HEADS,
                      n_kv_heads=KV_HEADS, intermediate_size=FFN, vocab_size=VOCAB, rms_norm_eps=EPS, theta=THETA,
                      compute_dtype="float32", layernorm_compute_type="float32", softmax_compute_type="float32",
                      rotary_dtype="float32", param_init_type="float32", use_past=False, use_flash_attention=False,
                      qkv_concat=False, max_position_embedding=MAX_SEQ, fused_rms_norm=False, use_rope_slice=True)
    model = LlamaForCausalLM(cfg)
    missing = ms.load_param_into_net(model, params, strict_load=True)
    assert not any(missing), missing
    if fault:
        model.model.layers[1].ffn_norm.eps = FAULT_EPS
    model.set_train(False)  # logits out; the loss is computed outside both models
    return model


def _norm_on_cpu() -> None:
    """Give msprobe's MindSpore statistics a Norm the CPU build can compute (see the module docstring)."""
    import mindspore as ms
    import msprobe.core.dump.data_dump.data_processor.mindspore_processor as processor
    from mindspore import mint, ops

    class _Mint:
        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(mint, name)

        @staticmethod
        def norm(x):  # noqa: ANN001, ANN205
            return ops.sqrt(ops.reduce_sum(ops.square(x.astype(ms.float32))))

    processor.mint = _Mint()


def _batch():  # noqa: ANN202
    import mindspore as ms
    from common import batch

    ids, labels = batch(VOCAB)
    return ms.Tensor(ids.numpy().astype(np.int32)), ms.Tensor(labels.numpy().astype(np.int32))


def mf_side(side: str, level: str) -> None:
    """One training step of mindformers' Llama (forward, cross-entropy outside the model, gradients, one SGD
    step) under msprobe's MindSpore dumper, written to ``dumps/msllama_<side>_<level>``."""
    import mindspore as ms
    from mindspore import nn, ops
    from msprobe.mindspore import PrecisionDebugger

    model = mf_model(fault=side == "mf_fault")
    ids, labels = _batch()
    opt = nn.SGD(model.trainable_params(), learning_rate=0.1)

    def loss_of(ids, labels):  # noqa: ANN001, ANN202
        logits = model(ids)[0]
        return ops.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    grad_fn = ms.value_and_grad(loss_of, None, opt.parameters)
    _norm_on_cpu()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cfg = Path(tmp) / "config.json"
        cfg.write_text(json.dumps({
            "task": "statistics", "dump_path": str(out), "rank": [], "step": [], "level": level,
            "async_dump": False,
            "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}}))
        debugger = PrecisionDebugger(config_path=str(cfg))
        debugger.start(model)
        loss, grads = grad_fn(ids, labels)
        opt(grads)
        debugger.stop()
        debugger.step()
        (proc,) = [p for p in (out / "step0").iterdir() if p.is_dir()]
        dest = DUMPS / f"msllama_{side}_{level}"
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for f in KEEP:
            shutil.copy(proc / f, dest / f)
    print(side, level, "loss", float(loss), file=sys.stderr)


def _hf_from_checkpoint():  # noqa: ANN202
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(str(CKPT)).eval()


def check() -> None:
    """The conversion is exact: both models give the same logits (transformers of the MindSpore venv reads
    the checkpoint)."""
    import torch
    from common import batch

    hf = _hf_from_checkpoint()
    ids, _ = batch(VOCAB)
    with torch.no_grad():
        ref = hf(input_ids=ids).logits.numpy()
    got = mf_model()(_batch()[0])[0].asnumpy().reshape(ref.shape)
    print("max |logits diff|", float(np.abs(got - ref).max()))


#: cells without parameters, paired by what they compute (mindformers' SiLU is a child of ``w1``, the
#: golden's a sibling of ``gate_proj``: the same function of the same values)
BY_HAND = {f"model.layers.{i}.feed_forward.w1.activation": f"model.layers.{i}.mlp.act_fn" for i in range(LAYERS)}


def modules() -> None:
    """Print the module pairs: a target cell pairs with the golden module whose parameters, children's
    included, hold the same values (as ``pairing.py`` does for two PyTorch models)."""
    hf = _hf_from_checkpoint()
    mf = mf_model()
    golden = {n: p.detach().numpy() for n, p in hf.named_parameters()}
    by_value = {}
    for name, value in golden.items():
        by_value.setdefault(tuple(np.sort(value, axis=None).tolist()), []).append(name)
    mapping = {}
    for p in mf.get_parameters():
        hits = by_value.get(tuple(np.sort(p.asnumpy(), axis=None).tolist()), [])
        if len(hits) == 1:
            mapping[p.name] = hits[0]
    golden_sets: dict[frozenset, list[str]] = {}
    for path, module in hf.named_modules():
        names = frozenset(f"{path}.{n}" for n, _ in module.named_parameters())
        if path and names:
            golden_sets.setdefault(names, []).append(path)
    pairs, unpaired = {}, []
    target_sets: dict[frozenset, list[str]] = {}
    for path, cell in mf.cells_and_names():
        names = frozenset(mapping.get(p.name, "?" + p.name) for p in cell.get_parameters())
        if path and names:
            target_sets.setdefault(names, []).append(path)
        elif path:
            unpaired.append(path)
    for names, t_paths in target_sets.items():
        g_paths = golden_sets.get(names, [])
        if len(g_paths) == len(t_paths):
            pairs.update(zip(sorted(t_paths, key=len), sorted(g_paths, key=len)))
        else:
            unpaired.extend(t_paths)
    pairs.update(BY_HAND)
    facts = {"pair": "msllama", "modules": pairs, "unpaired_modules": sorted(set(unpaired) - set(pairs)),
             "fault_module": FAULT_MODULE}
    # written to the file itself: mindformers logs to standard output
    (DUMPS.parent / "msllama.modules.json").write_text(json.dumps(facts, indent=1) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    cmd = sys.argv[1]
    if cmd != "hf":  # mindformers writes its log folder (output/log) into the working directory
        os.chdir(tempfile.mkdtemp(prefix="msllama_"))
    if cmd == "hf":
        hf_side(sys.argv[2])
    elif cmd in ("mf", "mf_fault"):
        mf_side(cmd, sys.argv[2])
    else:
        {"check": check, "modules": modules}[cmd]()
