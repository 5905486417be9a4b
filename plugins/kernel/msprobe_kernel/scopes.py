"""Where a kernel sits in the network: the scope MindSpore writes into every kernel's name.

A kernel's full name is its scope path (``Default/network-WithLoss/net-TinyLM/blocks-CellList/0-Block/
ln1-LayerNorm/ReduceMean-op9``); its dump file flattens the path with ``_`` and puts the op type in
front (``ReduceMean.Default_network-WithLoss_…_ReduceMean-op9``). A cell's scope segment is
``<attribute>-<CellClass>``, so a piece without ``-`` is part of the next segment (an attribute name
that holds ``_``: ``self_attn-Attention``), except the leading ``Default``/``Gradients`` roots.
This is the kernel plugin's :class:`~msprobe_core.plugin.HierarchySpec`: the report's model tree and
the first divergence's path come from the names alone, no file is read.
"""

from __future__ import annotations

from pathlib import Path

from msprobe_core.plugin import HierarchySpec

from .columns import KIND


def scope_segments(node: str) -> list[str] | None:
    """The scope of a kernel node (``OpType.Scope_..._Op-opN``), outermost first, the kernel last;
    ``None`` when the name holds no scope (a ``Parameter.…`` record, a name of another form)."""
    _, _, full = node.partition(".")
    pieces = full.split("_") if full else []
    segments: list[str] = []
    k = 0
    while k < len(pieces) and "-" not in pieces[k]:  # the roots: Default, Gradients
        segments.append(pieces[k])
        k += 1
    if not segments or k == len(pieces):
        return None
    glued: list[str] = []
    for piece in pieces[k:]:
        glued.append(piece)
        if "-" in piece:
            segments.append("_".join(glued))
            glued = []
    if glued:
        segments.append("_".join(glued))
    return segments


def kernel_ancestors(node: str) -> list[str] | None:
    """The scopes enclosing a kernel node, outermost first (``None``: no scope in its name)."""
    segments = scope_segments(node)
    return segments[:-1] if segments else None


def load_scopes(dump: Path | None, mode: str, framework: str) -> object:
    """The lookup for kernel results (every other result is not this source's)."""
    return kernel_ancestors if mode == KIND else None


SCOPES = HierarchySpec("kernel-scope", load_scopes, source="kernel scope", modules=True)
