"""What the stages ask of the plugins' registries: the framework, mapper, normalisers, metrics and verdict rules
that apply to a run (the lookups of :class:`~msprobe_core.host.registry.PluginHost`)."""

from __future__ import annotations

from ..errors import UsageError
from ..model import CompareOptions, DumpTable
from .specs import FrameworkSpec, MapperSpec, MetricSpec, NormalizerSpec, TensorMetricSpec, VerdictSpec


class RegistryLookups:
    """The lookups over the registries a :class:`~msprobe_core.host.registry.PluginHost` collects."""

    frameworks: list[FrameworkSpec]
    mappers: list[MapperSpec]
    normalizers: list[NormalizerSpec]
    metrics: dict[str, MetricSpec]
    conditional_metrics: list[MetricSpec]
    verdicts: list[VerdictSpec]
    tensor_metrics: list[TensorMetricSpec]

    def framework(self, name: str | None) -> FrameworkSpec | None:
        """The framework registered under ``name`` (``None``: the default one)."""
        for f in self.frameworks:
            if (name is None and f.is_default) or (name is not None and name in f.names()):
                return f
        return None

    def mapper_for(self, options: CompareOptions, kind: str = "dump", after: str | None = None) -> MapperSpec:
        """The mapper that runs for these options on tables of ``kind``: the first applicable one of the chain.

        ``after``: only mappers behind the one of that name are considered.
        """
        chain = self.mappers
        if after is not None:
            places = getattr(self, "mapper_places", [m.name for m in chain])
            if after not in places:  # a mapper handing on names itself or one it knows is there
                raise ValueError(f"no mapper named {after!r} in the chain ({', '.join(m.name for m in chain)})")
            behind = set(places[places.index(after) + 1 :])  # a turned-off default plugin's place counts
            chain = [m for m in chain if m.name in behind]
        for mapper in chain:
            if kind in mapper.kinds and mapper.applies(options):
                return mapper
        raise UsageError("no installed plugin provides a matcher for these options")

    def compare_keys(self, table: DumpTable, side: str, options: CompareOptions,
                     keys: list[str] | None = None) -> list[str]:
        """The compare key of every row of ``table``: its names (or ``keys``) through the normalisers of its kind."""
        keys = table.name if keys is None else keys  # the chain returns new lists, never edits the table's
        for norm in self.normalizers:
            if table.kind in norm.kinds:
                keys = norm.fn(table, side, keys, options)
        return keys

    def metric_set(self, mode: str, options: CompareOptions) -> MetricSpec | None:
        """The metric set of ``mode`` for a run with these options: the first whose ``applies`` holds."""
        for spec in self.conditional_metrics:
            if spec.mode == mode and spec.applies(options):
                return spec
        return self.metrics.get(mode)

    def verdicts_for(self, mode: str, options: CompareOptions) -> list[VerdictSpec]:
        """The verdict rules that run on a table of ``mode`` for these options, in chain order."""
        rules = [v for v in self.verdicts if mode in v.modes and v.applies(options)]
        replaced = {name for v in rules for name in v.replaces}
        return [v for v in rules if v.name not in replaced]

    def tensor_metrics_for(self, options: CompareOptions) -> list[TensorMetricSpec]:
        """The extra tensor metrics of a run with these options, in registration order."""
        return [m for m in self.tensor_metrics if m.applies(options)]
