"""The frameworks of the two sides of a pair, and what they say about dtypes.

Which framework each table comes from (its ``framework`` field, or a guess from its dtypes for
dumpers before 1.3.0), whether the two may be compared, and the dtype rules the match stage's
dtype gate and the verdicts' DType check apply; every answer comes from the frameworks' specs
(:class:`~msprobe_core.host.specs.FrameworkSpec`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..host.specs import FrameworkSpec
from ..model import DumpTable

if TYPE_CHECKING:
    from ..host.registry import PluginHost

log = logging.getLogger("msprobe")


def resolve_frameworks(target: DumpTable, golden: DumpTable, host: PluginHost) -> tuple[FrameworkSpec, FrameworkSpec]:
    """The framework of each side, checked for compatibility."""
    specs = []
    for table in (target, golden):
        guess = None if table.framework else guess_framework(table, host)
        spec = host.framework(table.framework or guess)
        if spec is None:
            if not table.framework:
                hint = host.install_hint("framework", "")  # the default framework's plugin
                raise UsageError("dump has no 'framework' field and no default framework plugin is installed"
                                 + (f" ({hint})" if hint else ""), path=table.source)
            hint = host.install_hint("framework", table.framework)
            raise UsageError(
                f"framework '{table.framework}' is not handled by any installed plugin "
                f"(installed: {', '.join(f.name for f in host.frameworks) or 'none'}{'; ' + hint if hint else ''})",
                path=table.source,
            )
        if guess:
            log.warning("Unable to get framework information from %s; its dtypes are spelled as %s spells them, "
                        "compared as %s.", table.source, spec.name, spec.name)
        elif not table.framework:
            log.warning("Unable to get framework information from %s, default setting is %s.", table.source, spec.name)
        specs.append(spec)
    tf, gf = specs
    if gf.name != tf.name and gf.name not in tf.golden_frameworks:
        raise UsageError(
            f"cannot compare a {target.framework or tf.name} target with a {golden.framework or gf.name} golden dump"
        )
    return tf, gf


def guess_framework(table: DumpTable, host: PluginHost) -> str | None:
    """The framework of a dump without a ``framework`` field (dumpers before 1.3.0), from its dtypes.

    A framework other than the default one is named when its float dtypes (``Float32``...) are
    spelled in the dump and no other framework's are; otherwise ``None`` (the default framework).
    """
    dtypes = set(table.dtype)
    hits = [f for f in host.frameworks if dtypes & set(f.float_dtypes)]
    return hits[0].name if len(hits) == 1 and not hits[0].is_default else None


def dtype_compat(tf: FrameworkSpec, gf: FrameworkSpec) -> Callable[[str | None, str | None], bool]:
    """The dtype gate's rule for a pair of frameworks: which target/golden dtypes may pair."""
    if tf is gf:
        floats = tf.float_dtypes

        def same(a: str | None, b: str | None) -> bool:
            return a in floats and b in floats

        return same

    def cross(a: str | None, b: str | None) -> bool:
        if a is None or b is None:
            return False
        ka = tf.dtype_family(a)
        return ka is not None and ka == gf.dtype_family(b)

    return cross
