"""The plugins of this repository, what each brings, and the install hints built from them.

The core imports no plugin, yet when a user asks for something only a plugin gives (a MindSpore
dump, ``-am``, ``--rank``, a kernel dump, the classic command line, ``--executor dask``) the error
should name the plugin and a command that installs it. This table is where the default plugin
``known_plugins`` learns which plugin brings what (it answers the core's hooks from it,
:mod:`.plugin`); it is the only module of ``msprobe_core`` that names a plugin distribution
(``tests/test_known_plugins.py`` checks that, and that each entry matches what the installed plugin
really registers). It imports nothing of the core.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

#: the directory holding the ``msprobe_core`` package: a checkout of msprobe-core when ``plugins/`` is beside it
CORE_ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class DumpLayout:
    """A dump directory layout a plugin's discovery claims: a directory holding a directory that ``child_dir``
    matches, or (``named``) one that it matches itself, or one holding the file ``marker``."""

    name: str
    #: what the layout is, for a message ("a MindSpore kernel dump (rank_<r> directories)")
    what: str
    child_dir: re.Pattern[str]
    marker: str | None = None
    #: whether a directory whose own name ``child_dir`` matches has the layout too (a kernel dump's ``rank_<r>``;
    #: not a mixed dump's ``graph`` folder, which holds step directories any discovery compares)
    named: bool = True

    def matches(self, path: Path) -> bool:
        """Whether the directory ``path`` has this layout (``False`` when it cannot be listed)."""
        if (self.named and self.child_dir.match(path.name)) or (self.marker and (path / self.marker).is_file()):
            return True
        try:
            with os.scandir(path) as entries:
                return any(self.child_dir.match(e.name) and e.is_dir() for e in entries)
        except OSError:
            return False


@dataclass(frozen=True)
class CommandLineForm:
    """A whole command line a plugin claims (``msprobe_claim_command_line``)."""

    name: str
    #: what the form is, for a message
    what: str
    matches: Callable[[Sequence[str]], bool]
    #: how ``msprobe --help`` shows the form: a heading, then usage lines
    usage: tuple[str, ...] = ()


@dataclass(frozen=True)
class KnownPlugin:
    """One plugin distribution of this repository and what it brings."""

    distribution: str
    #: its folder in a checkout of msprobe-core
    folder: str
    #: its name in the ``msprobe_core.plugins`` entry-point group
    entry_point: str
    #: its top-level Python package
    package: str
    #: what it gives a user, in one line (``msprobe plugins``)
    gives: str
    frameworks: tuple[str, ...] = ()
    #: whether one of its frameworks is the default one (dumps that name none)
    default_framework: bool = False
    options: tuple[str, ...] = ()
    layouts: tuple[DumpLayout, ...] = ()
    commands: tuple[str, ...] = ()
    command_lines: tuple[CommandLineForm, ...] = ()
    executors: tuple[str, ...] = ()
    #: core modules that stand where its Python API used to be (importing one says where it went), and that API
    modules: tuple[str, ...] = ()
    python_api: tuple[str, ...] = ()
    #: the other known distributions it depends on (they are not published: a checkout installs them too)
    needs: tuple[str, ...] = ()


def _is_classic_form(args: Sequence[str]) -> bool:
    """``msprobe -f FRAMEWORK compare …`` or ``msprobe compare -i …``: msprobe 8.3.3's command line."""
    if not args:
        return False
    if args[0] in ("-f", "--framework") or args[0].startswith("--framework="):
        return True
    return args[0] == "compare" and any(a in ("-i", "--input_path") or a.startswith("--input_path=") for a in args)


KNOWN_PLUGINS: tuple[KnownPlugin, ...] = (
    KnownPlugin("msprobe-pytorch", "plugins/pytorch", "pytorch", "msprobe_pytorch",
                "PyTorch dumps (.pt tensors, read without torch)",
                frameworks=("pytorch",), default_framework=True),
    KnownPlugin("msprobe-mindspore", "plugins/mindspore", "mindspore", "msprobe_mindspore",
                "MindSpore and MindTorch dumps (.npy tensors), graph/pynative mixed dumps, MindSpore-vs-PyTorch compares, "
                "-am/-cm/-lm",
                frameworks=("mindspore", "mindtorch"),
                options=("-am", "--api_mapping", "-cm", "--cell_mapping", "-lm", "--layer_mapping"),
                layouts=(DumpLayout("mixed", "a MindSpore graph/pynative mixed dump (graph and pynative directories)",
                                    re.compile(r"^(?:graph|pynative)$"), named=False),)),
    KnownPlugin("msprobe-kernel", "plugins/kernel", "kernel", "msprobe_kernel",
                "MindSpore static-graph kernel dumps (rank_<r> directories), --rank/--step",
                options=("--rank",),
                layouts=(DumpLayout("kernel", "a MindSpore kernel dump (rank_<r> directories)",
                                    re.compile(r"^rank_[0-9]+$"), marker="kernel_kbyk_dump.json"),),
                needs=("msprobe-mindspore",)),
    KnownPlugin("msprobe-classic", "plugins/classic", "classic", "msprobe_classic",
                "msprobe 8.3.3's classic command: msprobe -f pytorch|mindspore compare -i compare.json",
                command_lines=(CommandLineForm(
                    "classic", "the classic interface ('msprobe -f FRAMEWORK compare -i compare.json')",
                    _is_classic_form,
                    usage=("Classic interface (msprobe 8.3.3 tables, highlights and advisor; from the msprobe-classic "
                           "plugin):",
                           "  msprobe -f pytorch|mindspore compare -i compare.json [-o OUT] [-s] [-c] [-f] ...",
                           "  (options: 'msprobe -f pytorch compare --help')")),),
                modules=("msprobe_core.legacy",),
                python_api=("compare", "compare_distributed", "ms_compare", "ms_compare_distributed")),
    KnownPlugin("msprobe-dask", "plugins/dask", "dask", "msprobe_dask",
                "--executor dask, --scheduler: rank pairs and tensor chunks on a Dask cluster",
                options=("--scheduler",), executors=("dask",)),
)


def normalized_name(distribution: str) -> str:
    """A distribution name as packaging compares them (``msprobe_PyTorch`` is ``msprobe-pytorch``)."""
    return re.sub(r"[-_.]+", "-", distribution).lower().strip()


def by_distribution(name: str) -> KnownPlugin | None:
    """The known plugin of distribution ``name`` (any spelling), if any."""
    wanted = normalized_name(name)
    return next((p for p in KNOWN_PLUGINS if p.distribution == wanted), None)


def bringing(kind: str, value: str) -> KnownPlugin | None:
    """The known plugin that brings ``value`` of ``kind``: ``framework``, ``option`` (a flag), ``layout``,
    ``command``, ``command_line`` (a form's name), ``executor`` or ``module`` (a core module standing where its
    Python API used to be)."""
    for plugin in KNOWN_PLUGINS:
        if kind == "framework" and value in plugin.frameworks:
            return plugin
        if kind == "option" and value in plugin.options:
            return plugin
        if kind == "layout" and any(layout.name == value for layout in plugin.layouts):
            return plugin
        if kind == "command" and value in plugin.commands:
            return plugin
        if kind == "command_line" and any(form.name == value for form in plugin.command_lines):
            return plugin
        if kind == "executor" and value in plugin.executors:
            return plugin
        if kind == "module" and value in plugin.modules:
            return plugin
    return None


def command_line_usage() -> list[str]:
    """The lines ``msprobe --help`` shows for every known command-line form, a blank line after each form."""
    lines: list[str] = []
    for plugin in KNOWN_PLUGINS:
        for form in plugin.command_lines:
            if form.usage:
                lines += [*form.usage, ""]
    return lines


def default_framework_plugin() -> KnownPlugin | None:
    """The known plugin that brings the default framework."""
    return next((p for p in KNOWN_PLUGINS if p.default_framework), None)


def layout_of(path: Path) -> tuple[KnownPlugin, DumpLayout] | None:
    """The known layout the directory ``path`` has, and its plugin."""
    for plugin in KNOWN_PLUGINS:
        for layout in plugin.layouts:
            if layout.matches(path):
                return plugin, layout
    return None


def command_line_of(args: Sequence[str]) -> tuple[KnownPlugin, CommandLineForm] | None:
    """The known command-line form ``args`` has (``msprobe`` excluded), and its plugin."""
    for plugin in KNOWN_PLUGINS:
        for form in plugin.command_lines:
            if form.matches(args):
                return plugin, form
    return None


def install_command(plugin: KnownPlugin, loaded: Collection[str] = (), core_root: Path = CORE_ROOT) -> str:
    """The command that installs ``plugin`` (and the known plugins it needs that are not in ``loaded``).

    From a checkout of msprobe-core (``plugins/`` beside the core's own package) the command names the
    plugin folders by absolute path, so that it works from any directory; otherwise both ways are given.
    """
    wanted = [by_distribution(d) for d in plugin.needs if normalized_name(d) not in loaded]
    chain = [p for p in wanted if p is not None] + [plugin]
    folders = [core_root / p.folder for p in chain]
    if all((folder / "pyproject.toml").is_file() for folder in folders):
        return "pip install " + " ".join(f"-e {folder}" for folder in folders)
    # the name alone pulls what it needs from the index; from a checkout, the unpublished needs go first
    return (f"pip install {' '.join('-e ' + p.folder for p in chain)} from a checkout of msprobe-core, "
            f"or pip install {plugin.distribution}")


def is_present(distribution: str) -> bool:
    """Whether ``distribution`` is installed in this environment (loaded or not)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import distribution as find

    try:
        find(distribution)
    except PackageNotFoundError:
        return False
    return True


def missing_hint(plugin: KnownPlugin, loaded: Collection[str] = ()) -> str:
    """What to do about a known plugin that is not loaded, in one clause (no full stop).

    ``loaded``: the normalised names of the distributions whose plugins the host loaded.
    """
    if is_present(plugin.distribution):  # installed, but a filter, autoload off or a failed import kept it out
        return (f"the {plugin.distribution} plugin is installed but was not loaded; 'msprobe plugins' lists "
                "those that failed, and MSPROBE_PLUGIN_DISTRIBUTIONS or MSPROBE_DISABLE_PLUGIN_AUTOLOAD may leave "
                "it out")
    return f"install the {plugin.distribution} plugin: {install_command(plugin, loaded)}"


def hint_for(kind: str, value: str, loaded: Collection[str]) -> str | None:
    """How to get the known plugin that brings ``value`` of ``kind`` (see :func:`bringing`), in one clause;
    ``None`` when no known plugin brings it or its distribution is in ``loaded`` (normalised names)."""
    plugin = bringing(kind, value)
    if plugin is None or plugin.distribution in loaded:
        return None
    return missing_hint(plugin, loaded)
