"""How msprobe 8.3.3 pairs rows, as a normaliser and the head of the core's chain of mappers.

* compare keys are *(name, shape)*: 8.3.3 matches on both and has no backward
  re-numbering (``-dm`` matches on the name alone) — :func:`classic_keys`;
* ``-f`` is 8.3.3's fuzzy matcher: two queues, call numbers removed, shapes equal — :func:`fuzzy_match`;
* ``-am``/``-cm``/``-lm``: the mapping plugin's keys, joined with shapes (``-cm`` knows only
  exact rules in 8.3.3) — :func:`_mapped`;
* 8.3.3's dtype gate: float16, float32 and bfloat16 pair with each other (not float64),
  across frameworks the dtype kinds must agree — :func:`classic_gate`.

The mapper ``classic`` (:func:`classic_match`) heads the chain for classic runs; everything
it does not handle itself is handed to the rest of the chain (``ctx.run_after``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from msprobe_core.plugin import (
    CompareOptions,
    DumpTable,
    FrameworkSpec,
    MatchContext,
    MatchResult,
    apply_dtype_gate,
    join_on_keys,
)

from .settings import CLASSIC_MAPPER, is_classic

log = logging.getLogger("msprobe")
KEY_SEP = "\x00"


def _shape_text(shape: str | None) -> str:
    return "None" if shape is None else shape


def classic_keys(table: DumpTable, side: str, keys: list[str], options: CompareOptions) -> list[str]:
    """Compare keys as 8.3.3 builds them: row name and shape (name alone with a data mapping)."""
    if not is_classic(options):
        return keys
    if getattr(options, "data_mapping", None) or options.layer_mapping:
        return list(table.name)
    return [f"{n}{KEY_SEP}{_shape_text(s)}" for n, s in zip(table.name, table.shape)]


def rename_api(name: str) -> str:
    """8.3.3 ``Match.rename_api``: drop the call counter (``X.op.3.forward.output.0`` → ``X.op.forward.output.0``)."""
    if "forward" not in name and "backward" not in name:
        return name
    process = "forward" if "forward" in name else "backward"
    head, _, tail = name.partition(process)
    return head.rsplit(".", 2)[0] + "." + process + tail


def fuzzy_match(names_t: list[str], shapes_t: list[str], names_g: list[str], shapes_g: list[str]) -> MatchResult:
    """8.3.3 ``Match.process_fuzzy_match``: pair rows whose names differ only in call numbers.

    Unlike 8.3.3, an NPU row left without a partner is written as unmatched in every dump
    mode (8.3.3 crashes in statistics and md5 mode).
    """
    key_t = [(rename_api(n), s) for n, s in zip(names_t, shapes_t)]
    key_g = [(rename_api(n), s) for n, s in zip(names_g, shapes_g)]
    t_out: list[int] = []
    g_out: list[int] = []
    npu_q: list[int] = []
    bench_q: list[int] = []

    def check(i: int, j: int) -> bool:
        if key_t[i] == key_g[j]:
            return True
        log.warning("%s and %s can not fuzzy match", names_t[i], names_g[j])
        return False

    n_t, n_g = len(names_t), len(names_g)
    for i in range(max(n_t, n_g)):
        if i < n_t:
            npu_q.append(i)
        if i < n_g:
            bench_q.append(i)
        if bool(npu_q) ^ bool(bench_q):
            break
        hit = _match_op(npu_q, bench_q, check)
        if hit is None:
            continue
        n_point, b_point = hit
        for k in npu_q[:n_point]:
            t_out.append(k)
            g_out.append(-1)
        t_out.append(npu_q[n_point])
        g_out.append(bench_q[b_point])
        del npu_q[: n_point + 1]
        del bench_q[: b_point + 1]
    for k in npu_q:
        t_out.append(k)
        g_out.append(-1)
    return MatchResult(target=t_out, golden=g_out)


def _match_op(npu_q: list[int], bench_q: list[int], check: Any) -> tuple[int, int] | None:
    last_n, last_b = len(npu_q) - 1, len(bench_q) - 1
    for b_index in range(last_b):
        if check(npu_q[last_n], bench_q[b_index]):
            return last_n, b_index
    if check(npu_q[last_n], bench_q[last_b]):
        return last_n, last_b
    for n_index in range(last_n):
        if check(npu_q[n_index], bench_q[last_b]):
            return n_index, last_b
    return None


def _fuzzy(ctx: MatchContext) -> MatchResult:
    t, g = ctx.target, ctx.golden
    return fuzzy_match(
        t.name, [_shape_text(s) for s in t.shape], g.name, [_shape_text(s) for s in g.shape]
    )


def shape_filter(match: MatchResult, target_shapes: list[str | None], golden_shapes: list[str | None]) -> MatchResult:
    """Keep only pairs whose shapes agree: a name join turned into 8.3.3's (name, shape) join.

    A target row whose every partner has another shape stays once, unmatched.
    """
    t_out: list[int] = []
    g_out: list[int] = []
    k, n = 0, len(match.target)
    while k < n:
        i = match.target[k]
        end = k
        while end < n and match.target[end] == i:
            end += 1
        kept = [j for j in match.golden[k:end] if j >= 0 and target_shapes[i] == golden_shapes[j]]
        for j in kept or [-1]:
            t_out.append(i)
            g_out.append(j)
        k = end
    return MatchResult(target=t_out, golden=g_out, dtype_gate=match.dtype_gate, notes=match.notes)


def _mapped(ctx: MatchContext) -> MatchResult:
    """``-am``/``-cm``/``-lm`` in the classic interface: the mapping plugin's keys, joined with shapes."""
    plain = replace(ctx, target_keys=list(ctx.target.name), golden_keys=list(ctx.golden.name))
    if ctx.options.cell_mapping and not ctx.options.api_mapping:
        match = _cell_mapped(plain)
    else:  # the mapping plugin's mapper, as the rest of the chain picks it
        match = plain.run_after(CLASSIC_MAPPER)
    if not match.dtype_gate:  # a data mapping is active: 8.3.3 joins on the name alone
        return match
    return shape_filter(match, ctx.target.shape, ctx.golden.shape)


def _cell_mapped(ctx: MatchContext) -> MatchResult:
    """``-cm``: 8.3.3 knows only exact ``{cell_name}.{class_name}`` rules (no substring rules).

    The rules are msprobe-mindspore's (its public ``mapping.cell_mapping_keys`` with
    ``substring_rules=False``, the 8.3.3 variant it documents).
    """
    try:
        from msprobe_mindspore import mappers as ms_mappers
        from msprobe_mindspore import mapping as ms_mapping
    except ImportError:
        from msprobe_core.plugin import UsageError

        raise UsageError("-cm/--cell_mapping needs the msprobe-mindspore plugin (pip install msprobe-mindspore)") from None

    value = ctx.options.cell_mapping
    cell_map = ms_mapping.load_cell_mapping_yaml(value) if isinstance(value, (str, Path)) else None
    keys = ms_mapping.cell_mapping_keys(ms_mappers.table_rows(ctx.target), None, cell_map, substring_rules=False)
    active, _ = ms_mappers.data_mapping_active(ctx)
    match = join_on_keys(keys, ctx.golden_keys)
    match.dtype_gate = not active
    return match


def classic_gate(tf: FrameworkSpec, gf: FrameworkSpec) -> Callable[[str | None, str | None], bool]:
    """8.3.3's test of two differing dtypes, from what the frameworks declare.

    One framework: both are float16, float32 or bfloat16 (float64 pairs only with itself).
    Two frameworks: both dtypes are of the same kind (int, float, bool, complex).
    """
    if tf is gf:
        family = frozenset(d for d in tf.float_dtypes if tf.canonical(d) != "float64")

        def same(a: str | None, b: str | None) -> bool:
            return a in family and b in family

        return same

    def cross(a: str | None, b: str | None) -> bool:
        if a is None or b is None:
            return False
        family = tf.dtype_family(a)
        return family is not None and family == gf.dtype_family(b)

    return cross


def classic_match(ctx: MatchContext) -> MatchResult:
    """The ``classic`` mapper: 8.3.3's fuzzy matcher or mapping joins, else the rest of the chain; then its gate."""
    options = ctx.options
    if options.api_mapping or options.cell_mapping or options.layer_mapping:
        match = _mapped(ctx)
    elif getattr(options, "fuzzy_match", False) and not getattr(options, "data_mapping", None):
        match = _fuzzy(ctx)
    else:
        match = ctx.run_after(CLASSIC_MAPPER)
    if match.dtype_gate:
        tf = ctx.host.framework(ctx.target.framework or None)
        gf = ctx.host.framework(ctx.golden.framework or None)
        if tf is not None and gf is not None:
            match = apply_dtype_gate(match, ctx.target.dtype, ctx.golden.dtype, classic_gate(tf, gf))
        match.dtype_gate = False  # gated the 8.3.3 way: the core's gate must not run again
    return match
