"""Compare options, each declared once: the ``msprobe compare`` flags, the Python API keywords and the model.

An :class:`OptionSpec` says everything about one option: its Python name, its
command-line flags, what kind of value it takes, its default, its help line and
how to check a value. From the declarations come

* the options of ``msprobe compare`` (:func:`click_option`, grouped by plugin in ``--help``),
* the signature and docstring of :func:`msprobe_core.compare` (:func:`api_parameters`, :func:`api_doc`),
* :class:`msprobe_core.model.CompareOptions`: one attribute per core option, and the values of
  the options plugins declare (``options.rank``, ``options.api_mapping``…).

The core declares the framework-neutral options (:data:`CORE_OPTIONS`, registered by the
built-in plugin); plugins declare theirs through the ``msprobe_register_options`` hook.

A bad value is an :class:`~msprobe_core.errors.OptionError` naming the option the way
the caller spelled it: ``-gp/--golden_path`` on the command line, ``golden`` in Python
(:func:`api_naming`).
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import OptionError, UsageError
from .files.validation import check_byte_size

#: kinds of value an option takes
FLAG, TEXT, INT, PATH, CHOICE = "flag", "text", "int", "path", "choice"
_KINDS = (FLAG, TEXT, INT, PATH, CHOICE)


class _NoBare:
    def __repr__(self) -> str:
        return "NO_BARE"


#: ``OptionSpec.bare`` when the option always needs a value
NO_BARE: Any = _NoBare()

#: the dump kinds (``DumpTable.kind``) of the core's own dump files: ``dump.json`` and ``debug.json``
DUMP_KINDS = ("dump", "debug")


@dataclass(frozen=True)
class OptionSpec:
    """One compare option, declared once.

    ``name`` is the keyword of the Python API and the attribute of :class:`~msprobe_core.model.CompareOptions`;
    ``flags`` are its spellings on the command line (none: Python only). ``kind`` is ``flag`` (a bool), ``text``,
    ``int``, ``path`` (a :class:`~pathlib.Path`) or ``choice`` (one of ``choices``). ``bare`` is the value of a flag
    given without a value (``-am`` alone: ``True``), which makes the value optional. ``multiple``: the flag may be
    repeated; the value is a tuple. ``validate(value)`` checks and may normalise a given value, raising
    ``ValueError(reason)``; it is not called for the default.

    ``api``: also a keyword of :func:`msprobe_core.compare`; ``attribute``: a field of the options (both true for
    every plugin option). ``aliases``: older keyword spellings the Python API still accepts.

    ``kinds``: the dump kinds (``DumpTable.kind``) whose compares the option changes; empty (the default): every
    kind. Given for a run whose jobs are of another kind (a plugin's discovery says so in ``CompareJob.kind``), it
    would do nothing, so the run is refused (:func:`refuse_inapplicable`).
    """

    name: str
    flags: tuple[str, ...]
    help: str
    kind: str = TEXT
    default: Any = None
    bare: Any = NO_BARE
    choices: tuple[str, ...] = ()
    multiple: bool = False
    metavar: str | None = None
    required: bool = False
    show_default: bool = False
    validate: Callable[[Any], Any] | None = None
    api: bool = True
    attribute: bool = True
    aliases: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    plugin: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"option name {self.name!r} is not a Python identifier")
        if self.kind not in _KINDS:
            raise ValueError(f"option {self.name}: kind must be one of {', '.join(_KINDS)}, not {self.kind!r}")
        if any(not f.startswith("-") for f in self.flags):
            raise ValueError(f"option {self.name}: flags must start with '-' ({', '.join(self.flags)})")

    def applies_to(self, kind: str) -> bool:
        """Whether the option changes anything in a compare of dumps of ``kind``."""
        return not self.kinds or kind in self.kinds

    def label(self, short: bool = False) -> str:
        """How the current caller spells this option: its flags on the command line, its name in Python."""
        if _STYLE.get() == "api" or not self.flags:
            return self.name
        return self.flags[0] if short else "/".join(self.flags)


# --------------------------------------------------------------------------- naming
_STYLE: contextvars.ContextVar[str] = contextvars.ContextVar("msprobe_option_style", default="cli")


@contextmanager
def api_naming() -> Iterator[None]:
    """Inside the block, errors name options by their Python name (``golden``), not their flags."""
    token = _STYLE.set("api")
    try:
        yield
    finally:
        _STYLE.reset(token)


def option_label(name: str, short: bool = False) -> str:
    """The current spelling of core option ``name`` (``-tp/--target_path`` or ``target``)."""
    spec = CORE_BY_NAME.get(name)
    return spec.label(short) if spec is not None else name


def dump_paths_label() -> str:
    """The two dump paths as the caller names them: ``-tp/-gp`` or ``target/golden``."""
    return f"{option_label('target', short=True)}/{option_label('golden', short=True)}"


# --------------------------------------------------------------------------- checking values
def _type_error(spec: OptionSpec, expected: str, value: Any) -> OptionError:
    return OptionError(f"{spec.label()} must be {expected}, not {value!r}", option=spec.name)


def _api_value(spec: OptionSpec, value: Any) -> Any:
    """A Python value converted to what the option holds (the command line's types), or an error."""
    if spec.multiple:
        if isinstance(value, Mapping) and spec.validate is not None:
            return value  # its validator reads mappings too (the example plugin's {pattern: replacement})
        if isinstance(value, (str, bytes, os.PathLike)) or not isinstance(value, Iterable):
            raise _type_error(spec, "a list", value)
        return tuple(_one_api_value(spec, v) for v in value)
    return _one_api_value(spec, value)


def _one_api_value(spec: OptionSpec, value: Any) -> Any:
    if spec.kind == FLAG:
        if not isinstance(value, bool):
            raise _type_error(spec, "True or False", value)
        return value
    if spec.bare is not NO_BARE and value is True:
        return spec.bare
    if spec.kind == INT:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _type_error(spec, "an integer", value)
        return value
    if spec.kind == PATH:
        if not isinstance(value, (str, os.PathLike)):
            raise _type_error(spec, "a path", value)
        return Path(value)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise _type_error(spec, "a string" + (" or True" if spec.bare is not NO_BARE else ""), value)
    if spec.kind == CHOICE and value not in spec.choices:
        raise OptionError(f"{spec.label()} must be one of {', '.join(spec.choices)}, not {value!r}", option=spec.name)
    return value


def _validated(spec: OptionSpec, value: Any) -> Any:
    if spec.validate is None:
        return value
    try:
        return spec.validate(value)
    except OptionError:
        raise
    except ValueError as exc:  # the documented refusal; any other exception is the validator's bug
        raise OptionError(f"{spec.label()}: {exc}", option=spec.name) from None


def _is_unset(spec: OptionSpec, value: Any) -> bool:
    """Whether a value means "not given" (the default, ``None``, ``False`` for an optional-value option)."""
    if value is None:
        return True
    if spec.multiple and isinstance(value, (tuple, list)) and not value:
        return True
    return spec.bare is not NO_BARE and value is False


def default_problem(spec: OptionSpec) -> str | None:
    """Why the default of ``spec`` is no value of its kind (``kind="int", default="abc"``), else ``None``.

    Such a default would reach click as if the user had typed it, failing every compare with an
    error about the command line.
    """
    if spec.default is None:
        return None
    try:
        _api_value(spec, spec.default)
    except OptionError as exc:
        return f"its default is wrong: {exc}"
    return None


def given_values(options: Iterable[OptionSpec], values: Mapping[str, Any]) -> list[OptionSpec]:
    """The options ``values`` sets to something other than their default (``-fm`` given, ``-am`` with or without a file)."""
    return [s for s in options if s.name in values and not _is_unset(s, values[s.name])
            and values[s.name] != s.default]


def refuse_inapplicable(options: Iterable[OptionSpec], values: Mapping[str, Any], jobs: Iterable[Any]) -> None:
    """Stop a run given options that do nothing for the dumps it compares (``OptionSpec.kinds``).

    ``jobs``: the run's :class:`~msprobe_core.host.specs.CompareJob` list; only jobs whose
    discovery knew their dump kind (``job.kind``) are checked. One :class:`UsageError`
    naming every such option, before anything is written: an option silently ignored
    would let the user believe the result used it.
    """
    jobs = list(jobs)
    given = [s for s in given_values(options, values) if s.kinds]
    for kind in dict.fromkeys(k for k in (getattr(job, "kind", "") for job in jobs) if k):
        idle = [s for s in given if not s.applies_to(kind)]
        if idle:
            one = len(idle) == 1
            target = next(job.target for job in jobs if getattr(job, "kind", "") == kind)
            labels = [s.label() for s in idle]
            named = labels[0] if one else f"{', '.join(labels[:-1])} and {labels[-1]}"
            raise UsageError(
                f"{named} {'does' if one else 'do'} nothing in a compare of "
                f"{kind} dumps, which {dump_paths_label()} are; leave {'it' if one else 'them'} out",
                path=target,
            )


# --------------------------------------------------------------------------- the set of a host
#: flags and names of ``msprobe compare`` no option may take: the help
RESERVED_FLAGS = {"-h": "help", "--help": "help"}


class OptionSet:
    """Every option a plugin host knows, core ones first, in declaration order."""

    def __init__(self, specs: Sequence[OptionSpec] = ()) -> None:
        self.specs: list[OptionSpec] = []
        self.by_name: dict[str, OptionSpec] = {}
        self._flags: dict[str, OptionSpec] = {}
        self._aliases: dict[str, OptionSpec] = {}
        #: how to get the plugin of a flag no loaded plugin declares (set by the plugin host: ``msprobe_install_hint``)
        self.install_hint: Callable[[str], str | None] = lambda flag: None
        for spec in specs:
            self.add(spec)

    def add(self, spec: OptionSpec) -> str | None:
        """Add ``spec``; returns why it was refused (its name or a flag is taken or reserved), else ``None``."""
        for flag in spec.flags:
            if flag in RESERVED_FLAGS:
                return f"flag {flag} is reserved for the help of msprobe compare"
        if spec.name in RESERVED_FLAGS.values():
            return f"option name '{spec.name}' is reserved for the help of msprobe compare"
        for key in (spec.name, *spec.aliases):
            taken = self.by_name.get(key) or self._aliases.get(key)
            if taken is not None:
                return f"option name '{key}' is already declared by {taken.plugin or 'msprobe-core'}"
        for flag in spec.flags:
            if flag in self._flags:
                return f"flag {flag} is already declared by {self._flags[flag].plugin or 'msprobe-core'}"
        self.specs.append(spec)
        self.by_name[spec.name] = spec
        self._flags.update(dict.fromkeys(spec.flags, spec))
        self._aliases.update(dict.fromkeys(spec.aliases, spec))
        return None

    def get(self, name: str) -> OptionSpec | None:
        """The option called ``name`` (or one of its aliases)."""
        return self.by_name.get(name) or self._aliases.get(name)

    def plugin_specs(self) -> list[OptionSpec]:
        """The options declared by plugins (not core fields of ``CompareOptions``)."""
        return [s for s in self.specs if s.name not in CORE_BY_NAME]

    def defaults(self) -> dict[str, Any]:
        """Name → default of every plugin option."""
        return {s.name: s.default for s in self.plugin_specs()}

    # -- values ----------------------------------------------------------------
    def from_cli(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Checked values of a ``msprobe compare`` command line (click already converted the types)."""
        out: dict[str, Any] = {}
        for spec in self.specs:
            if spec.name not in values:
                continue
            value = values[spec.name]
            if spec.bare is not NO_BARE:
                value = _from_bare(spec, value)
            if spec.multiple:
                value = tuple(value or ())
            out[spec.name] = spec.default if _is_unset(spec, value) else _validated(spec, value)
        return out

    def from_api(self, values: Mapping[str, Any], function: str = "compare") -> dict[str, Any]:
        """Checked values of Python keyword arguments (unknown names and bad values are :class:`OptionError`)."""
        out: dict[str, Any] = {}
        for key, value in values.items():
            spec = self.get(key)
            if spec is None or not spec.api:
                raise OptionError(f"{function}() got an unexpected keyword argument '{key}'{_suggest(key, self)}",
                                  option=key)
            if spec.name in out:
                raise OptionError(f"{function}() got '{spec.name}' twice (also as '{key}')", option=spec.name)
            out[spec.name] = spec.default if _is_unset(spec, value) else _validated(spec, _api_value(spec, value))
        return out

    def model_values(self, values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(core fields, plugin values)`` for :class:`~msprobe_core.model.CompareOptions`.

        Every plugin option gets a value (its default when not given), so options built
        here read the same in a worker process that never loaded the plugin host.
        """
        core = {k: v for k, v in values.items() if k in CORE_BY_NAME and CORE_BY_NAME[k].attribute}
        plugin = self.defaults()
        plugin.update((k, v) for k, v in values.items() if k in plugin)
        return core, plugin


#: what click gives an optional-value option used alone when its bare value is not text (``-am``: True)
BARE_TOKEN = "__builtin__"


def _bare_token(spec: OptionSpec) -> str:
    return spec.bare if isinstance(spec.bare, str) else BARE_TOKEN


def _from_bare(spec: OptionSpec, value: Any) -> Any:
    return spec.bare if value is not None and str(value) == _bare_token(spec) else value


def _suggest(name: str, options: OptionSet) -> str:
    import difflib

    hint = options.install_hint(f"--{name}")  # a keyword of a plugin that is not loaded (its long flag is --NAME)
    if hint:
        return f" ({hint})"
    close = difflib.get_close_matches(name, [s.name for s in options.specs if s.api], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


# --------------------------------------------------------------------------- the command line
def click_option(spec: OptionSpec) -> Any:
    """The click option of a declaration (its value arrives under ``spec.name``)."""
    import click

    kwargs: dict[str, Any] = {"help": spec.help, "required": spec.required, "show_default": spec.show_default,
                              "multiple": spec.multiple}
    if spec.metavar:
        kwargs["metavar"] = spec.metavar
    if spec.kind == FLAG:
        return click.Option([*spec.flags, spec.name], is_flag=True, default=bool(spec.default), **kwargs)
    if spec.kind == INT:
        kwargs["type"] = click.INT
    elif spec.kind == PATH:
        kwargs["type"] = click.Path(path_type=Path)
    elif spec.kind == CHOICE:
        kwargs["type"] = click.Choice(list(spec.choices))
    else:
        kwargs["type"] = click.STRING
    if spec.bare is not NO_BARE:
        kwargs.update(is_flag=False, flag_value=_bare_token(spec))
    if spec.default is not None:  # click >= 8.2 takes an explicit default=None as a value: required is not checked
        kwargs["default"] = spec.default
    return click.Option([*spec.flags, spec.name], **kwargs)


# --------------------------------------------------------------------------- the Python API
def api_annotation(spec: OptionSpec) -> str:
    """The type of the keyword, as the signature shows it."""
    base = {FLAG: "bool", INT: "int", PATH: "str | os.PathLike", CHOICE: "str", TEXT: "str"}[spec.kind]
    if spec.bare is not NO_BARE:
        base = "bool | " + base
    if spec.multiple:
        base = f"Sequence[{base}]"
    return base if spec.kind == FLAG or spec.default is not None else f"{base} | None"


def api_parameters(options: OptionSet) -> list[Any]:
    """Keyword-only parameters of :func:`msprobe_core.compare`, one per API option, in declaration order."""
    import inspect

    return [
        inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY, default=s.default, annotation=api_annotation(s))
        for s in options.specs if s.api
    ]


def api_doc(options: OptionSet, plugin_names: Mapping[str, str] | None = None) -> str:
    """The ``Options`` part of the API docstring: every option, its type, default and help."""
    lines: list[str] = []
    plugin_names = plugin_names or {}
    group = None
    for spec in options.specs:
        if not spec.api:
            continue
        owner = "" if spec.name in CORE_BY_NAME else plugin_names.get(spec.plugin, spec.plugin)
        if owner != group:
            group = owner
            lines.append("" if not lines else "")
            lines.append(f"Options from {owner}:" if owner else "Options:")
        flags = f" ({', '.join(spec.flags)})" if spec.flags else ""
        lines.append(f"    {spec.name}: {api_annotation(spec)} = {spec.default!r}{flags}")
        lines.append(f"        {spec.help}")
        if spec.bare is not NO_BARE and spec.flags:
            lines.append(f"        True: as {spec.flags[0]} given without a value.")
        if spec.aliases:
            lines.append(f"        Also accepted as: {', '.join(spec.aliases)}.")
    return "\n".join(lines).strip("\n")


# --------------------------------------------------------------------------- core declarations
#: The framework-neutral options of the core (registered by ``msprobe_core.builtin``), in ``--help`` order.
CORE_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("target", ("-tp", "--target_path"), "Target (NPU) dump.json, step dir or dump root.", kind=PATH,
               required=True, api=False, attribute=False),
    OptionSpec("golden", ("-gp", "--golden_path"), "Golden (bench) dump.json, step dir or dump root.", kind=PATH,
               required=True, api=False, attribute=False),
    OptionSpec("output_dir", ("-o", "--output_path"), "Output directory.", kind=PATH, default=Path("./output"),
               bare="./output", show_default=True, api=False),
    OptionSpec("workers", ("--workers",), "Worker processes (default: all cores).", kind=INT),
    # the default plugin 'known_plugins' names the executors this repository's plugins add (msprobe_option_help)
    OptionSpec("executor", ("--executor",), "Where rank pairs and tensor chunks run: local (default) or one a "
               "plugin adds.", metavar="NAME"),
    OptionSpec("quiet", ("-q", "--quiet"), "Print only errors.", kind=FLAG, default=False),
    OptionSpec("force", ("--force",), "Replace result files left in the output dir by an earlier run.", kind=FLAG,
               default=False),
    OptionSpec("max_tensor_bytes", ("--max_tensor_bytes",), "Refuse tensors larger than SIZE (e.g. 4G; 0 = no "
               "limit; default 16G or $MSPROBE_MAX_TENSOR_BYTES).", metavar="SIZE", validate=check_byte_size, api=False,
               attribute=False),
    OptionSpec("output_format", ("--output_format",), "Result file format: csv (default), xlsx, or one a plugin "
               "adds (see 'msprobe plugins').", default="csv", metavar="NAME"),
)
CORE_BY_NAME: dict[str, OptionSpec] = {s.name: s for s in CORE_OPTIONS}


# --------------------------------------------------------------------------- defaults of plugin options
#: name → default of every plugin option a plugin host of this process has collected
_DECLARED_DEFAULTS: dict[str, Any] = {}


def remember_defaults(options: OptionSet) -> None:
    """Record the defaults of ``options``' plugin options, for options objects built without a host."""
    for name, default in options.defaults().items():
        _DECLARED_DEFAULTS.setdefault(name, default)


def declared_default(name: str) -> Any:
    """The default of plugin option ``name`` (``AttributeError`` when no loaded plugin declares it)."""
    try:
        return _DECLARED_DEFAULTS[name]
    except KeyError:
        raise AttributeError(f"no compare option '{name}' is declared by msprobe-core or a loaded plugin") from None
