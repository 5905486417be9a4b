"""Every call into the code of an object a plugin registered goes through one guard (:class:`PluginCode`).

A mapper, normaliser, metric set, tensor metric, verdict rule, writer, hierarchy source, framework
reader, executor, communication rule or option validator is a plugin's code running inside the
core's stages, in whichever process runs them (the serial run, a pool worker, a chunk worker, the
Python API). When such code

* raises a ``BaseException`` that is no ``Exception`` (``sys.exit()``, ``GeneratorExit``, a class of its
  own deriving from ``BaseException`` or from ``KeyboardInterrupt``), that would end the run with no
  result and exit 0 (``SystemExit``) or a raw traceback: the guard turns it into
  :class:`~msprobe_core.errors.PluginFailed` naming the plugin, its distribution and the line;
* returns what its spec says it cannot (a mapper's ``None``, a writer's string), the core would fail
  later in its own frames and call it an internal error: the guard refuses the value at once, naming
  the plugin and where the function is defined.

:class:`~msprobe_core.errors.PluginFailed` is an ``Exception``: where the core lets a run go on
without a plugin's object (a tensor metric's cell, a hierarchy source's tree) it is handled as any
exception of that object is; elsewhere it ends the run with exit 1 (``compare()`` raises it).
Ordinary exceptions pass through unchanged: the core's handlers and the CLI's blame
(:mod:`msprobe_core.host.blame`) already name their plugin.

A user's Ctrl-C is not the plugin's failure and goes through: Python's SIGINT handler (and the CLI's
SIGTERM/SIGHUP handler) raise exactly ``KeyboardInterrupt``, so that class itself is the user's; a
subclass of it, which no signal raises, is the plugin's own.

The core's own specs (the built-in plugin's) are not wrapped: their failures are the core's bugs.
"""

from __future__ import annotations

import functools
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any

from ..errors import MsprobeError, PluginFailed
from ..model import DumpTable, MatchResult
from .loading import failure_text, is_users_interrupt

#: ``check(result, args, kwargs)``: why a returned value is junk, else ``None``
ReturnCheck = Callable[[Any, tuple[Any, ...], dict[str, Any]], "str | None"]


def _short(value: Any) -> str:
    plain = value is None or type(value) in (str, bytes, int, float, bool)  # exactly: a subclass's repr is its code
    text = repr(value) if plain else f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:59] + "…"


def _file_line(path: str, line: int) -> str:
    return f"{os.path.basename(path)}:{line}"


def _defined_at(fn: Any) -> str:
    code = getattr(fn, "__code__", None) or getattr(vars(type(fn)).get("__call__"), "__code__", None)
    return _file_line(code.co_filename, code.co_firstlineno) if code is not None else "?"


def _raised_at(fn: Any, exc: BaseException) -> str:
    """The innermost line of ``exc``'s traceback in the package ``fn`` comes from (else its innermost line)."""
    package = (getattr(fn, "__module__", None) or "").partition(".")[0]
    tb: TracebackType | None = exc.__traceback__
    innermost = own = None
    while tb is not None:
        frame = tb.tb_frame
        here = (frame.f_code.co_filename, tb.tb_lineno)
        if not str(frame.f_globals.get("__name__", "")).startswith("msprobe_core."):
            innermost = here
        if package and str(frame.f_globals.get("__name__", "")).partition(".")[0] == package:
            own = here
        tb = tb.tb_next
    found = own or innermost
    return _file_line(*found) if found else _defined_at(fn)


class PluginCode:
    """A registered object's function, called so that whatever it does wrong is reported as its plugin's.

    ``owner``: how messages name the plugin (``plugin 'x' (distribution y)``); ``what``: the object and
    field (``mapper 'buggy' (MapperSpec.run)``); ``returns``: the check of what it returns; ``adapt``: what
    the checked result is handed through (a returned callable is guarded in turn).
    """

    def __init__(self, fn: Callable[..., Any], owner: str, what: str, returns: ReturnCheck | None = None,
                 adapt: Callable[[Any], Any] | None = None, passes: tuple[type[Exception], ...] | None = None) -> None:
        functools.update_wrapper(self, fn)  # __module__, __name__, attributes (a reader's ``accepts_str``)
        self.fn = fn
        self.owner = owner
        self.what = what
        self.returns = returns
        self.adapt = adapt
        self.passes = passes

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            result = self.fn(*args, **kwargs)
        except Exception as exc:
            if self.passes is None or isinstance(exc, self.passes):
                raise
            raise PluginFailed(f"{self.owner}: {self.what} failed: {failure_text(exc)} "
                               f"(at {_raised_at(self.fn, exc)}; a bug in that plugin)") from exc
        except BaseException as exc:
            if is_users_interrupt(exc):
                raise
            raise PluginFailed(f"{self.owner}: {self.what} failed: {failure_text(exc)} "
                               f"(at {_raised_at(self.fn, exc)})") from exc
        if self.returns is not None:
            problem = self.returns(result, args, kwargs)
            if problem is not None:
                raise PluginFailed(f"{self.owner}: {self.what} returned {problem} "
                                   f"(defined at {_defined_at(self.fn)}; a bug in that plugin)")
        return result if self.adapt is None else self.adapt(result)

    def __repr__(self) -> str:
        return f"<guarded {self.fn!r}>"

    def __reduce__(self) -> Any:
        return (PluginCode, (self.fn, self.owner, self.what, self.returns, self.adapt, self.passes))

    def __eq__(self, other: object) -> bool:  # specs compare as before: by the functions they hold
        return isinstance(other, PluginCode) and other.fn == self.fn

    def __hash__(self) -> int:
        return hash(self.fn)


# --------------------------------------------------------------------------- what each function may return
def _match(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    return None if isinstance(result, MatchResult) else f"{_short(result)}, not a MatchResult"


def _rows_expected(ctx: Any) -> int | None:
    """How many cells each column must have: a verdict rule's rows, a metric set's matched rows (``None``: a
    ``whole_table`` set, handed no columns, whose columns need only agree with each other)."""
    if isinstance(getattr(ctx, "group_of_row", None), list):
        return len(ctx.group_of_row)
    if getattr(ctx, "columns", None) and isinstance(getattr(getattr(ctx, "match", None), "target", None), list):
        return len(ctx.match.target)
    return None


def _columns(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if not isinstance(result, Mapping):
        return f"{_short(result)}, not a dict of columns"
    expected = _rows_expected(args[0]) if args else None
    for name, cells in result.items():
        if not isinstance(name, str) or isinstance(cells, (str, bytes)) or not hasattr(cells, "__len__"):
            return f"column {name!r} as {_short(cells)}, not a list of cells"
        if expected is None:
            expected = len(cells)
        elif len(cells) != expected:
            return f"{len(cells)} cells in column {name!r} for {expected} rows"
    return None


def _keys(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    keys = args[2] if len(args) > 2 else kwargs.get("keys")
    if result is keys:  # handed back untouched (the chunked path asks so on keys that must not be read)
        return None
    if not isinstance(result, (list, tuple)):
        return f"{_short(result)}, not a list of keys"
    if keys is not None and len(result) != len(keys):
        return f"{len(result)} keys for {len(keys)} rows"
    bad = next((k for k in result if not isinstance(k, str)), None)
    return None if bad is None else f"the key {_short(bad)}, not a string"


def _files(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if not isinstance(result, (list, tuple)) or not all(isinstance(p, (str, os.PathLike)) for p in result):
        return f"{_short(result)}, not a list of the files it wrote"
    if not result:  # a run that says it succeeded must have its result
        return "no file, not the files it wrote (the result first)"
    missing = next((p for p in result if not os.path.isfile(p)), None)
    return None if missing is None else f"{os.fspath(missing)!r}, a file it did not write"


def _cell(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if isinstance(result, (numbers.Number, str)) or getattr(result, "ndim", None) == 0:  # a 0-d array: a number
        return None
    return f"{_short(result)}, not a number or a text"


def _array(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    return None if hasattr(result, "shape") and hasattr(result, "dtype") else f"{_short(result)}, not an array"


def _lookup(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    return None if result is None or callable(result) else f"{_short(result)}, not a lookup function or None"


def _ancestors(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if result is None or (isinstance(result, Sequence) and not isinstance(result, (str, bytes))):
        return None
    return f"{_short(result)}, not a list of names or None"


def _chunked(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    needed = ("__enter__", "__exit__", "append", "commit")
    missing = [name for name in needed if not callable(getattr(result, name, None))]
    return None if not missing else f"{_short(result)}, which has no {', '.join(missing)}"


def _executor(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    # duck-typed: the executors' layer sits above the host
    if callable(getattr(result, "map_unordered", None)) and callable(getattr(result, "for_task", None)):
        return None
    return f"{_short(result)}, not an Executor"


def _comm_kind(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if result in (None, "collective", "send", "recv"):
        return None
    return f"{_short(result)}, not 'collective', 'send', 'recv' or None"


def _jobs(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    from .specs import CompareJob

    if result is None or (isinstance(result, list) and all(isinstance(j, CompareJob) for j in result)):
        return None
    return f"{_short(result)}, not a list of CompareJob"


def _table(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    from .strategies import DumpIndex

    # a DumpIndex: what a loader that opts in to the chunked strategy gives when asked (docs/plugins.md)
    if result is None or isinstance(result, (DumpTable, DumpIndex)):
        return None
    return f"{_short(result)}, not a DumpTable"


def _pair(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    # msprobe_load_pair (the pair_loading plugin's hook): two of what msprobe_load_dump gives
    if result is None or (isinstance(result, tuple) and len(result) == 2
                          and all(_table(side, args, kwargs) is None and side is not None for side in result)):
        return None
    return f"{_short(result)}, not a (target, golden) pair of DumpTable"


def _outcomes(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    # duck-typed: the pipeline's JobOutcome sits above the host
    if result is None or (isinstance(result, list) and all(hasattr(o, "job") and hasattr(o, "files") for o in result)):
        return None
    return f"{_short(result)}, not a list of JobOutcome"


def _tail(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    # msprobe_csv_tail (the forking plugin's hook): what the CSV writer waits for, appends and closes
    if result is None or (isinstance(getattr(result, "start", None), int)
                          and all(hasattr(result, a) for a in ("side", "finish", "close"))):
        return None
    return f"{_short(result)}, not a tail (start, side, finish(), close())"


#: hooks whose implementations only watch (their return value is ignored): one that fails does not stop the run
#: (``msprobe_tensor_rows_compared``: the default plugin tensor_metrics')
WATCH_HOOKS = ("msprobe_tensor_rows_compared", "msprobe_plugins_loaded", "msprobe_output_dirs_ready")


def guard_watchers(pm: Any, is_core: Callable[[str], bool],
                   failed: Callable[[str, str, BaseException], None]) -> None:
    """Wrap each installed plugin's implementation of a :data:`WATCH_HOOKS` hook (dispatched through ``pm.hook``, so
    that pluggy's monitoring sees it): what it raises (but the user's Ctrl-C) goes to ``failed(plugin, hook, exc)``
    and the other implementations still run."""
    for hook in WATCH_HOOKS:
        caller = getattr(pm.hook, hook, None)  # a plugin's own hook (msprobe_add_hookspecs) is there with its plugin
        for impl in caller.get_hookimpls() if caller is not None else ():
            if not is_core(impl.plugin_name):
                impl.function = _watcher(hook, impl.plugin_name, impl.function, failed)


def _watcher(hook: str, plugin: str, function: Callable[..., Any],
             failed: Callable[[str, str, BaseException], None]) -> Callable[..., Any]:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> None:
        try:
            function(*args, **kwargs)
        except BaseException as exc:
            if is_users_interrupt(exc):
                raise
            failed(plugin, hook, exc)

    return call


#: the first-result hooks the host calls during a run -> the check of what an implementation returns
HOOK_RESULTS: dict[str, ReturnCheck] = {"msprobe_discover_jobs": _jobs, "msprobe_load_dump": _table,
                                        "msprobe_run_jobs": _outcomes, "msprobe_load_pair": _pair,
                                        "msprobe_csv_tail": _tail}

#: spec type name -> (field, check of its result); a field left out is guarded without a check
_FIELDS: dict[str, tuple[tuple[str, ReturnCheck | None], ...]] = {
    "FrameworkSpec": (("read_tensor", _array), ("write_tensor", None), ("parse_statistic", None)),
    "MapperSpec": (("run", _match), ("applies", None)),
    "NormalizerSpec": (("fn", _keys),),
    "MetricSpec": (("compute", _columns), ("applies", None), ("recognizes", None)),
    "TensorMetricSpec": (("fn", _cell), ("applies", None)),
    "VerdictSpec": (("judge", _columns), ("applies", None)),
    "WriterSpec": (("write", _files), ("open_chunked", _chunked), ("open_sheets", None)),
    "HierarchySpec": (("load", _lookup),),
    "ExecutorSpec": (("create", _executor), ("selected_by", None)),
    "CommOpSpec": (("kind", _comm_kind),),
    "OptionSpec": (("validate", None),),
}
#: field -> the exceptions that are its documented answers (others: the plugin's bug); unlisted fields: all pass
_PASSES: dict[str, tuple[type[Exception], ...]] = {"validate": (ValueError, MsprobeError)}
#: how messages name a spec of each type
_NOUN = {"FrameworkSpec": "framework", "MapperSpec": "mapper", "NormalizerSpec": "normaliser",
         "MetricSpec": "metric set", "TensorMetricSpec": "metric", "VerdictSpec": "verdict rule",
         "WriterSpec": "writer", "HierarchySpec": "hierarchy source", "ExecutorSpec": "executor",
         "CommOpSpec": "communication rule", "OptionSpec": "option"}


def guard_spec(spec: Any, owner: str) -> Any:
    """``spec`` with each of its functions called through :class:`PluginCode` (``owner`` names its plugin)."""
    kind = type(spec).__name__
    fields = _FIELDS.get(kind)
    if fields is None:
        return spec
    label = getattr(spec, "name", None) or getattr(spec, "mode", None) or getattr(spec, "column", None) or "?"
    changes: dict[str, Any] = {}
    for field, check in fields:
        fn = getattr(spec, field, None)
        if fn is None or isinstance(fn, PluginCode) or not callable(fn) or _is_core_code(fn):
            continue
        what = f"{_NOUN[kind]} '{label}' ({kind}.{field})"
        adapt = None
        if kind == "HierarchySpec":
            adapt = functools.partial(_guarded_lookup, owner, f"{_NOUN[kind]} '{label}' (its lookup)")
        elif field == "open_chunked":
            adapt = functools.partial(GuardedObject, owner=owner, what=f"{_NOUN[kind]} '{label}' (its chunked writer)",
                                      methods=CHUNKED_WRITER_METHODS, others=True)
        changes[field] = PluginCode(fn, owner, what, check, adapt, passes=_PASSES.get(field))
    return replace(spec, **changes) if changes else spec


def _is_core_code(fn: Any) -> bool:
    """A function of the core's (a spec's default ``applies``): the core's own, and compared by identity."""
    return str(getattr(fn, "__module__", None) or "").startswith("msprobe_core.")


def _guarded_lookup(owner: str, what: str, lookup: Any) -> Any:
    """A hierarchy source's lookup, guarded as the source is (``None``: the source does not know the dump)."""
    return None if lookup is None else PluginCode(lookup, owner, what, _ancestors)


#: the methods of a plugin's chunked writer (``WriterSpec.open_chunked``) called through the guard, each with the
#: check of what it returns; its other attributes are its own
CHUNKED_WRITER_METHODS: dict[str, ReturnCheck | None] = {"append": None, "commit": _files, "abort": None}
#: the methods of a plugin's partial sink (``PartialSpec.sink``) called through the guard; ``continued`` and
#: ``absorb`` only where it has them (a sink that can continue elsewhere), and nothing else of it is seen
SINK_METHODS: dict[str, ReturnCheck | None] = {"feed_table": None, "finish": None, "continued": None, "absorb": None}


class GuardedObject:
    """A plugin's object whose methods the core calls go through the guard, each as :class:`PluginCode`: a chunked
    writer (:data:`CHUNKED_WRITER_METHODS`) or a partial's sink (:data:`SINK_METHODS`).

    ``methods``: the methods guarded, with the check of what each returns (one the object lacks is an
    ``AttributeError``, as on the object); ``renews``: those that hand out another object of the same kind, guarded
    in turn (a sink's ``continued``); ``passes``: as :class:`PluginCode`'s. ``others``: whether its other public
    attributes are the object's own, unguarded (else it has none). As a context manager, what its ``__enter__``
    hands out (when another object) is the one guarded from then on.
    """

    def __init__(self, obj: Any, *, owner: str, what: str, methods: Mapping[str, ReturnCheck | None],
                 renews: tuple[str, ...] = (), passes: tuple[type[Exception], ...] | None = None,
                 others: bool = False) -> None:
        self._obj, self._owner, self._what = obj, owner, what
        self._methods, self._renews, self._passes, self._others = methods, renews, passes, others

    def _guarded(self, name: str) -> PluginCode:
        return PluginCode(getattr(self._obj, name), self._owner, f"{self._what}.{name}", self._methods.get(name),
                          passes=self._passes)

    def __enter__(self) -> GuardedObject:
        entered = self._guarded("__enter__")()
        if entered is not self._obj:  # it hands out another object: that one's methods are guarded
            self._obj = entered
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> Any:
        return self._guarded("__exit__")(kind, exc, tb)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # its own fields (looked up before they are set, by a copy) and special names
            raise AttributeError(name)
        if name in self._methods:
            call = self._guarded(name)  # AttributeError where the object has no such method
            if name not in self._renews:
                return call
            return lambda *args: GuardedObject(call(*args), owner=self._owner, what=self._what, methods=self._methods,
                                               renews=self._renews, passes=self._passes, others=self._others)
        if self._others:
            return getattr(self._obj, name)
        raise AttributeError(name)


class GuardedSinkFactory:
    """A plugin's summary-sink factory (what its ``PartialSpec.sink`` chose for the run) whose sinks call every method
    through the guard: a sink's ``sys.exit()`` or bug is its plugin's failure, named, never a run that ends early
    with exit 0. Picklable when the factory is (it travels to the workers that run the jobs)."""

    def __init__(self, factory: Callable[[], Any], owner: str, what: str) -> None:
        self.factory, self.owner, self.what = factory, owner, what

    def __call__(self) -> GuardedObject:
        made = PluginCode(self.factory, self.owner, f"{self.what}'s factory", passes=(MsprobeError,))()
        return GuardedObject(made, owner=self.owner, what=f"{self.what}'s sink", methods=SINK_METHODS,
                             renews=("continued",), passes=(MsprobeError,))


def guarded_sink_factory(factory: Callable[[], Any] | None, *, owner: str, what: str) -> GuardedSinkFactory | None:
    """``factory`` with its sinks guarded (``None``: the run needs no partial from this spec)."""
    return None if factory is None else GuardedSinkFactory(factory, owner, what)
