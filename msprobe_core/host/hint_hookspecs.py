"""The hooks of the default plugin ``known_plugins`` (issue 33): what the table of this repository's plugins tells
a user about the plugins that are not loaded (install hints, ``msprobe --help``; what ``msprobe plugins`` lists of
them goes through the hook the default plugin ``plugins_command`` declares, ``msprobe_list_plugins``).

Part of :mod:`msprobe_core.host.hookspecs` (which imports them; a plugin implements them as every hook, with
``msprobe_core.plugin.hookimpl``), declared apart only to keep that module under its line bound.
"""

from __future__ import annotations

from .markers import hookspec

#: what :mod:`msprobe_core.host.hookspecs` takes in
__all__ = ["msprobe_command_line_usage", "msprobe_first_party_distributions", "msprobe_install_hint",
           "msprobe_option_help"]


@hookspec(firstresult=True)
def msprobe_install_hint(kind: str, value: str, loaded: set[str]) -> str | None:
    """What to tell a user who asked for something no loaded plugin handles, naming the plugin that does and how
    to install it; ``None`` when you know of none.

    ``loaded``: the normalised names of the distributions whose plugins the host loaded. For these kinds of
    ``value`` the answer is one clause without a full stop (``install the msprobe-frob plugin: pip install ...``)
    that the core's own message carries: ``framework`` (a dump's framework; ``""``: the default framework, for a
    dump that names none), ``option`` (a flag of ``msprobe compare``; ``--NAME`` for the Python keyword
    ``NAME``), ``command`` (a sub-command), ``executor``. For these it is the whole message, in place of the
    core's: ``layout`` (a directory no loaded plugin understood: what it is, and who compares it),
    ``command_line`` (a command line no plugin claimed, as :func:`shlex.join` writes it) and ``module`` (a module
    of ``msprobe_core`` standing where a plugin's Python API used to be: what to import instead).

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_command_line_usage() -> list[str]:
    """Lines ``msprobe --help`` shows after its commands: the usage of command lines in another syntax than
    ``msprobe``'s own (a heading, the usage lines, and a blank line after each form).

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def msprobe_option_help(name: str, text: str) -> str | None:
    """The help of the compare option ``name`` as ``--help`` and the Python API show it, given its declared help
    ``text`` (e.g. naming the values other plugins add); ``None`` keeps ``text``.

    .. versionadded:: 0.1
    """


@hookspec
def msprobe_first_party_distributions() -> list[str]:
    """The distributions of msprobe-core's own repository: their plugins' options are settled before any other
    plugin's (a third-party plugin cannot take ``--rank`` from them), and their bugs are reported as the core's.

    .. versionadded:: 0.1
    """
