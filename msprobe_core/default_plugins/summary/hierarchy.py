"""Where in the model a node is: the chain of modules/cells/scopes enclosing it, from the registered sources.

A :class:`SideHierarchy` asks every registered :class:`~msprobe_core.host.specs.HierarchySpec`
(``msprobe_register_hierarchies``: the plugins' first, then the default plugin ``hierarchy``'s ``construct.json``
and ``stack.json``) for a lookup of one side of one result, once; the first lookup that knows a node gives
its ancestors. A :class:`RunHierarchy` holds both sides of every result of a run, by result label, and
adds ``path`` (outermost first, ending with the node) to each first divergence of a summary, with the
golden counterpart's path for cross-framework results. Nothing is read from the tensors or the tables:
only what the sources read once (``construct.json``, ``stack.json``; the kernel plugin's scopes are in
the names themselves).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msprobe_core.plugin import AncestorLookup, HierarchySpec, MsprobeError, PluginFailed

from .views import node_of

log = logging.getLogger("msprobe")

#: what ``path_note`` says when no source knows the node
NO_HIERARCHY = ("the dump records no module hierarchy for this node (no construct.json entry, no stack.json "
                "frames, no scope in its name): the path is the node alone")
#: what ``path_note`` says when no source knows the node and the run reads no construct.json and no stack.json
NO_SOURCE = ("construct.json and stack.json are not read: the default plugin 'hierarchy' is turned off (-p "
             "no:hierarchy or MSPROBE_DISABLE_PLUGINS); the path is the node alone")
#: what ``path_note`` says of a path made of calling code
CALLING_CODE = "stack.json frames of the calling code (the dump records no module hierarchy)"


def hierarchy_specs() -> list[HierarchySpec]:
    """The run's hierarchy sources, plugins' first (none outside a run: the core registers none)."""
    from msprobe_core.plugin import run_host

    host = run_host()
    return [] if host is None else list(host.hierarchies)


def unknown_note() -> str:
    """What ``path_note`` says of a node no source knows: :data:`NO_SOURCE` in a run with the default plugin
    ``hierarchy`` turned off, else :data:`NO_HIERARCHY`."""
    from msprobe_core.plugin import run_host

    host = run_host()
    return NO_SOURCE if host is not None and "hierarchy" in host.disabled else NO_HIERARCHY


@dataclass
class SideHierarchy:
    """The lookups of one side of one result (its dump), in the order they are asked."""

    lookups: list[tuple[HierarchySpec, AncestorLookup]] = field(default_factory=list)
    #: the ``path_note`` of a node no lookup knows
    unknown: str = NO_HIERARCHY

    @classmethod
    def of(cls, dump: Path | None, mode: str, framework: str,
           specs: Sequence[HierarchySpec] | None = None) -> SideHierarchy:
        """Ask every source once for its lookup of ``dump`` (a source that fails is skipped, with a warning)."""
        out = cls(unknown=unknown_note())
        for spec in hierarchy_specs() if specs is None else specs:
            try:
                lookup = spec.load(dump, mode, framework)
            except MsprobeError as exc:
                log.warning("%s: %s; the model tree does without it.", spec.name, exc)
                continue
            except Exception as exc:  # noqa: BLE001 - a plugin's bug costs its tree, never the finished compare
                log.warning("hierarchy source %s (plugin %s) failed: %s", spec.name, spec.plugin or "?", exc)
                continue
            if lookup is not None:
                out.lookups.append((spec, lookup))
        return out

    def ancestors(self, node: str) -> tuple[list[str], HierarchySpec | None]:
        """The enclosing modules of ``node``, outermost first, and the source that knew them."""
        for spec, lookup in self.lookups:  # asked once per call of a big model: nothing but the asking
            try:
                found = lookup(node)
            except PluginFailed as exc:  # it exited or answered junk: said once, and not asked again
                log.warning("%s; the model tree does without it.", exc)
                self.lookups = [x for x in self.lookups if x[1] is not lookup]  # (this loop goes on over the old list)
                found = None
            except Exception:  # noqa: BLE001 - one odd node name must not cost the summary
                found = None
            if found is not None:
                return list(map(str, found)), spec
        return [], None

    def describe(self, node: str) -> dict[str, Any]:
        """``{"path", "path_source", "path_note"}`` of ``node``."""
        chain, spec = self.ancestors(node)
        out: dict[str, Any] = {"path": [*chain, node], "path_source": (spec.source or spec.name) if spec else None}
        if spec is None:
            out["path_note"] = self.unknown
        elif not spec.modules:
            out["path_note"] = CALLING_CODE
        return out


@dataclass
class RunHierarchy:
    """Both sides' hierarchies of every result of a run, by result label."""

    sides: dict[str, tuple[SideHierarchy, SideHierarchy]] = field(default_factory=dict)
    cross: dict[str, bool] = field(default_factory=dict)

    def add(self, label: str, target: SideHierarchy, golden: SideHierarchy, cross_framework: bool) -> None:
        """The hierarchies of the result ``label``."""
        self.sides[label] = (target, golden)
        self.cross[label] = cross_framework

    def target(self, label: str) -> SideHierarchy:
        """The target side of result ``label`` (empty when unknown)."""
        return self.sides.get(label, (SideHierarchy(), SideHierarchy()))[0]

    def add_paths(self, summary: dict[str, Any]) -> None:
        """Give every first divergence of ``summary`` its ``path`` (see :func:`divergence_path`)."""
        entries = [summary.get("first_divergence")] + list(summary.get("first_divergence_by_rank") or ())
        for entry in entries:
            if isinstance(entry, dict):
                entry.update(self.divergence_path(entry))

    def divergence_path(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """``path``/``path_source`` (``path_note`` when there is something to say) of one first divergence;
        for a cross-framework result also ``golden_path``/``golden_path_source`` of its golden counterpart."""
        label = str(entry.get("rank") or "")
        target, golden = self.sides.get(label, (SideHierarchy(), SideHierarchy()))
        node = str(entry.get("node") or "")
        out = target.describe(node)
        if self.cross.get(label):
            counterpart = str(entry.get("golden_row") or "")
            golden_node = node_of(counterpart)[0] if counterpart else ""
            if golden_node:
                g = golden.describe(golden_node)
                out.update(golden_path=g["path"], golden_path_source=g["path_source"])
            else:
                out.update(golden_path=None, golden_path_source=None)
        return out


def run_hierarchy(results: Iterable[tuple[str, Path | None, Path | None, str, tuple[str, str] | None]]
                  ) -> RunHierarchy:
    """The hierarchies of ``(label, target dump, golden dump, mode, (target, golden) frameworks)`` per result."""
    specs = hierarchy_specs()
    run = RunHierarchy()
    for label, target, golden, mode, frameworks in results:
        fw = frameworks or ("", "")
        run.add(label, SideHierarchy.of(target, mode, fw[0], specs), SideHierarchy.of(golden, mode, fw[1], specs),
                bool(fw[0] and fw[1] and fw[0] != fw[1]))
    return run


def format_path(entry: Mapping[str, Any], arrow: str = " → ") -> list[str]:
    """The console lines of a first divergence's path (none when the path is the node alone)."""
    path = entry.get("path") or []
    lines = []
    if len(path) > 1:
        note = f" ({entry['path_note']})" if entry.get("path_note") else ""
        lines.append(f"    path{note}: {arrow.join(path)}")
    elif path:
        lines.append(f"    path: {path[0]} ({entry.get('path_note') or 'at the top level'})")
    golden = entry.get("golden_path")
    if golden and len(golden) > 1:
        lines.append(f"    golden path: {arrow.join(golden)}")
    return lines
