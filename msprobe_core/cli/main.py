"""The ``msprobe`` command line: the command group, ``compare``, and :func:`main`.

Whatever a command raises becomes one message and an exit code in :func:`msprobe_core.cli.guard.guarded`;
every other sub-command (``msprobe plugins``, ``msprobe report`` and ``msprobe merge_result`` too, default plugins')
arrives through ``msprobe_register_commands``; a command line the core cannot parse is offered to the plugins
(``msprobe_claim_command_line``).
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from ..errors import CompareFailed
from .guard import escape_unencodable_output, guarded, usage_error_line

log = logging.getLogger("msprobe")


class _MsprobeGroup(click.Group):
    """The ``msprobe`` group: the core's ``compare``, and every command a plugin adds (``msprobe_register_commands``:
    the default plugins' ``plugins``, ``report`` and ``merge_result`` as a third party's).

    The plugins are loaded for a name that is not the core's, and for ``msprobe --help``, which lists every
    command; registering a command imports its module only (numpy and the rest load when it runs).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *sorted(plugin_commands())]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name and not cmd_name.startswith("-"):
            command = plugin_commands().get(cmd_name)
            if command is None:
                raise_no_such_command(cmd_name, ctx)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Every command (the core's, then the plugins' by name) with the whole first paragraph of its help."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            text = inspect.cleandoc(command.help or "").split("\n\n")[0]
            rows.append((name, " ".join(text.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The usage of the command lines of another syntax that plugins tell of (``msprobe_command_line_usage``: the
        classic interface's), kept as it is written, then the epilog."""
        from ..host.registry import get_host

        usage = "".join(line + "\n" for line in get_host().command_line_usage())
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(inspect.cleandoc(("\b\n" + usage if usage else "") + (self.epilog or "")))


def plugin_commands() -> dict[str, click.Command]:
    """The commands the loaded plugins add, by name (loads the plugins once)."""
    from ..host.registry import get_host

    return get_host().register_commands(tuple(cli.commands))


def command_named(name: str) -> click.Command | None:
    """The sub-command ``name``: the core's, else a plugin's (the plugins are loaded only for a name not the core's)."""
    if not name or name.startswith("-"):
        return None
    return cli.commands.get(name) or plugin_commands().get(name)


def raise_no_such_command(name: str, ctx: click.Context | None = None) -> None:
    """A usage error for a command no plugin gives that names who would give it: a known plugin not installed, or
    the default plugin turned off (``-p no:report``); returns when there is nothing to add to click's own."""
    from ..host.defaults import turned_off_command_owner, turned_off_note
    from ..host.registry import get_host

    host = get_host()
    hint = host.install_hint("command", name)
    if hint:  # click would only say "No such command"
        raise click.UsageError(f"no such command '{name}' ({hint})", ctx)
    owner = turned_off_command_owner(name, host.disabled)
    if owner:
        raise click.UsageError(f"no such command '{name}' ({turned_off_note(owner)})", ctx)


_EPILOG = """--debug may go anywhere on the command line; the exit code stays the same.
The commands above include the plugins'; 'msprobe plugins' lists the installed plugins,
what each gives, and the known plugins not installed with their install command.
Run 'msprobe COMMAND --help' for the options of a command."""


@click.group(cls=_MsprobeGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EPILOG)
@click.version_option(package_name="msprobe-core", prog_name="msprobe")
@click.option("--debug", is_flag=True, help="Show the Python traceback of an error (before or after the command).")
@click.option("-p", "plugin_off", metavar="no:NAME", multiple=True,
              help="Turn a plugin off by its name (a default plugin or an installed one; 'msprobe plugins' lists "
                   "them), before the command; repeatable. MSPROBE_DISABLE_PLUGINS=NAME,NAME does the same.")
def cli(debug: bool, plugin_off: tuple[str, ...]) -> None:
    """Compare msprobe dumps of two training runs and find where they diverge."""


class _CompareCommand(click.Command):
    """``msprobe compare``: one option per declaration of the plugin host (``msprobe_core.options``).

    The options are built when first needed (parsing, ``--help``), which loads the
    plugins; the core's come first, then each plugin's under its own heading.
    """

    def __init__(self) -> None:
        self._declared: list[click.Parameter] | None = None
        #: the plugin host the options were built from: another host (a test's, a run with plugins turned off)
        #: declares other options
        self._declared_by: object = None
        super().__init__("compare", callback=compare_cmd, help=compare_cmd.__doc__,
                         context_settings={"help_option_names": ["-h", "--help"]})

    @property  # type: ignore[override]
    def params(self) -> list[click.Parameter]:
        from ..host.registry import get_host

        host = get_host()
        if self._declared is None or self._declared_by is not host:
            from ..options import click_option

            self._declared = [click_option(spec) for spec in host.options.specs]
            self._declared_by = host
        return self._declared

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._declared = list(value) if value else None

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from ..host.registry import get_host, is_core_plugin

        host = get_host()
        groups: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            spec = host.options.get(param.name or "")
            owner = "" if spec is None or is_core_plugin(spec.plugin) else host.distribution_of(spec.plugin)
            groups.setdefault(owner, []).append(record)
        with formatter.section("Options"):
            formatter.write_dl(groups.pop("", []))
        for owner, records in groups.items():
            with formatter.section(f"Options from {owner}"):
                formatter.write_dl(records)


def _given_options(ctx: click.Context, values: dict[str, object]) -> set[str]:
    """The options the command line set (not left at their default)."""
    from click.core import ParameterSource

    return {name for name in values
            if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)}


def compare_cmd(**kw: object) -> None:
    """Compare two dumps: -tp TARGET -gp GOLDEN (files, step directories or dump roots holding step<N>)."""
    from ..console.logs import banner_end, setup_logging
    from ..console.stages import run_status, stage
    from ..host.registry import get_host
    from ..options import refuse_inapplicable
    from ..run.context import RunContext
    from ..run.jobs import run_jobs
    from ..workers.gcpause import gc_paused

    setup_logging(bool(kw["quiet"]))
    click.get_current_context().with_resource(run_status("msprobe compare", quiet=bool(kw["quiet"])))
    # no collector pass over the run's tables and summary: all of it is freed when the command ends
    click.get_current_context().with_resource(gc_paused(freeze=True))
    host = get_host()
    values = host.options.from_cli(kw)  # a bad value: one line naming the flag
    _set_tensor_cap(values["max_tensor_bytes"])
    options = host.build_options(values, given=_given_options(click.get_current_context(), kw))
    host.writer(options.output_format)  # an unknown format is a usage error before any work
    stage("find the dumps")
    jobs = host.discover_jobs(values["target"], values["golden"], options)
    refuse_inapplicable(host.options.specs, values, jobs)  # an option that would do nothing: before any work
    host.pm.hook.msprobe_check_run(jobs=jobs, options=options, values=values)  # e.g. --json-summary over an input
    from ..pipeline.sink import SUMMARY_SINK
    from ..run.finished import FinishedRun, choose_partials, finish_run

    sink, partial_names, single = choose_partials(host, options, values, len(jobs))  # msprobe_register_partials
    fields = _summary_extra(len(jobs))
    if fields.setdefault(SUMMARY_SINK, sink) is None:  # a caller that asked for no partials at all
        partial_names, single = {}, None
    run = RunContext(host, **fields)
    started = time.time()

    def finished(outcomes: list, failed: bool) -> FinishedRun:
        return FinishedRun(outcomes, options, values=values, inputs=(values["target"], values["golden"]),
                           started=started, failed=failed, partial_names=partial_names, single_partial=single)

    try:
        outcomes = run_jobs(jobs, options, host, run)
    except CompareFailed as exc:  # some ranks failed: still summarise (and report) what was written
        if exc.outcomes is None:
            raise
        finish_run(host, finished(exc.outcomes, failed=True))
        raise
    from ..files.removals import finish_removals

    def announce() -> None:  # once the report and the JSON summary are written too
        if any(o.files for o in outcomes):
            banner_end(log)

    try:  # a side file of the split write is still being removed meanwhile (remove_later)
        finish_run(host, finished(outcomes, failed=False), announce)  # the run-finished hooks; a gate: exit 3
    finally:
        finish_removals()


def _summary_extra(results: int) -> dict[str, object]:
    """The :class:`~msprobe_core.run.context.RunContext` fields ``msprobe compare`` sets besides the plugins'
    partials (``msprobe_register_partials``, :mod:`msprobe_core.run.finished`): each job hands back its partials
    and keeps no table, so the run's memory does not grow with the ranks. A ``summary_sink`` set here replaces the
    plugins' (``None``: no partials; the tests' reference runs keep their tables)."""
    from ..pipeline.sink import KEEP_TABLES

    return {KEEP_TABLES: False}


cli.add_command(_CompareCommand())


def _unknown_option(args: list[str]) -> str | None:
    """The first option token the chosen sub-command does not know (click would split ``-fr`` into ``-f r``)."""
    command = command_named(args[0]) if args else None
    if command is None:
        return None
    known = {"--help", "-h"}
    for param in command.params:
        known.update(getattr(param, "opts", []))
        known.update(getattr(param, "secondary_opts", []))
    for token in args[1:]:
        if token == "--":
            break
        if token.startswith("-") and len(token) > 1 and token.split("=", 1)[0] not in known:
            return token
    return None


def _did_you_mean(args: list[str], bad: str) -> str:
    """`` Did you mean '--fuzzy_match'?`` for an unknown option close to one the sub-command declares (as click
    answers a mistyped command), else ``""``; single-dash options (``-fm``, ``-tp``) are candidates too."""
    import difflib

    command = command_named(args[0])
    declared = [o for param in command.params for o in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]]
    close = difflib.get_close_matches(bad.split("=", 1)[0], declared, n=1)
    return f". Did you mean '{close[0]}'?" if close else ""


def split_plugins_off(args: list[str]) -> list[str]:
    """``args`` with the ``-p no:NAME`` options before the sub-command taken out (pytest's spelling; also
    ``-pno:NAME`` and ``-p=no:NAME``); the names are turned off for this process's plugin host. A ``-p`` whose value
    is not ``no:NAME`` is a usage error (a plugin is loaded by installing it or by ``MSPROBE_LOAD_PLUGINS``)."""
    from ..host.defaults import disable_on_command_line

    kept: list[str] = []
    names: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token in cli.commands or not token.startswith("-"):
            kept.extend(args[i:])
            break
        value = None
        if token == "-p":
            value = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        elif token.startswith("-p") and not token.startswith("--"):
            value = token[2:].lstrip("=")
        if value is None:
            kept.append(token)
        elif value.startswith("no:") and value[3:].strip():
            names.append(value[3:].strip())
        else:
            raise click.UsageError(f"-p takes no:NAME (a plugin to turn off), not {value!r}")
        i += 1
    disable_on_command_line(names)
    return kept


def split_debug(args: list[str]) -> tuple[list[str], bool]:
    """``args`` without ``--debug`` (accepted before or after the sub-command), and whether it was there."""
    end = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:end] if a != "--debug"] + args[end:]
    return kept, len(kept) != len(args)


def _set_tensor_cap(value: object) -> None:
    """Hand ``--max_tensor_bytes`` (checked by its declaration) to worker processes via the env; check the env var now."""
    from ..files.validation import MAX_TENSOR_BYTES_ENV, max_tensor_bytes

    if value is not None:
        previous = os.environ.get(MAX_TENSOR_BYTES_ENV)
        os.environ[MAX_TENSOR_BYTES_ENV] = str(value)

        def restore() -> None:  # the cap is this command's: the next in-process run starts clean
            if previous is None:
                os.environ.pop(MAX_TENSOR_BYTES_ENV, None)
            else:
                os.environ[MAX_TENSOR_BYTES_ENV] = previous

        ctx = click.get_current_context(silent=True)
        if ctx is not None:
            ctx.call_on_close(restore)
    max_tensor_bytes()  # an invalid environment value is a usage error before any work


def _foreign(args: list[str]) -> bool:
    """Whether the core cannot parse ``args`` itself, so that a plugin may claim it (``msprobe_claim_command_line``)."""
    if not args:
        return False
    if args[0].startswith("-"):
        return args[0].split("=", 1)[0] not in _GROUP_OPTIONS
    return _unknown_option(args) is not None


#: the options of the ``msprobe`` group itself (anything else before a command is not msprobe's syntax)
_GROUP_OPTIONS = ("-h", "--help", "--version")


def _missing_plugin(args: list[str]) -> str | None:
    """The error line for a command line whose form a known plugin that is not loaded provides (else ``None``)."""
    import shlex

    from ..host.registry import get_host

    said = get_host().install_hint("command_line", shlex.join(args))
    return f"msprobe: error: {said}" if said else None


def _no_such_option(bad: str, args: list[str]) -> str:
    """``no such option``, naming the known plugin that brings the option when it is not loaded, else the closest
    option the sub-command declares."""
    from ..host.defaults import turned_off_note, turned_off_owner
    from ..host.registry import get_host

    command = args[0]
    flag = bad.split("=", 1)[0]
    host = get_host()
    hint = host.install_hint("option", flag) if command == "compare" else None
    if hint:  # the fix is the install, not compare's --help
        return f"msprobe: error: no such option '{bad}' ({hint})"
    owner = turned_off_owner(flag, host.disabled) if command == "compare" else None
    if owner:
        return f"msprobe: error: no such option '{bad}' ({turned_off_note(owner)})"
    return usage_error_line(f"no such option '{bad}'{_did_you_mean(args, bad)}", f"msprobe {command}")


def main(argv: list[str] | None = None) -> int:
    """Run the ``msprobe`` command line ``argv`` (default: ``sys.argv[1:]``) in this process; returns the exit code
    (the console script, :mod:`msprobe_core.entry`, exits with it)."""
    escape_unencodable_output()
    args, debug = split_debug(list(sys.argv[1:] if argv is None else argv))
    try:
        args = split_plugins_off(args)
    except click.UsageError as exc:
        click.echo(usage_error_line(exc.message, "msprobe"), err=True)
        return 2
    if args and args[0] not in _GROUP_OPTIONS:
        # knowing compare's flags, a plugin's command, or which plugin claims the command line, loads the
        # plugins: say what goes wrong there as compare would
        if args[0] == "compare" or args[0].startswith("-"):  # a plugin's own command owns its stdout
            from ..console.logs import setup_logging

            setup_logging(bool({"-q", "--quiet"} & set(args)))
        # the plugins load here, inside the guard: a bad MSPROBE_LOAD_PLUGINS is one line and exit 2
        loaded = guarded(_load_plugins, debug=debug)
        if loaded:
            return loaded
    if _foreign(args):
        from ..host.registry import get_host

        claim = get_host().claim_command_line(args)
        if claim is not None:
            return guarded(_with_run_host(claim.run), debug=debug, command_path=claim.command_path)
        missing = _missing_plugin(args)
        if missing:
            click.echo(missing, err=True)
            return 2
    bad = _unknown_option(args)
    if bad:
        click.echo(_no_such_option(bad, args), err=True)
        return 2
    path = f"msprobe {args[0]}" if args and command_named(args[0]) is not None else "msprobe"
    return guarded(_with_run_host(lambda: cli.main(args=args, prog_name="msprobe", standalone_mode=False)),
                   debug=debug, command_path=path)


def _load_plugins() -> None:
    """Load the process's plugin host, importing its modules here too: a Ctrl-C that strikes while they load (inside a
    class body, where Python wraps it in a ``RuntimeError``) is the guard's, one line and exit 130."""
    from ..host.registry import get_host

    get_host()


def _with_run_host(command: Callable[[], Any]) -> Callable[[], Any]:
    """``command`` run with the process's plugin host as the run's (:mod:`msprobe_core.running`), loaded
    inside the guard: what the summary, the report and ``msprobe report`` know of the plugins comes from it."""
    def run() -> Any:
        from ..host.registry import get_host
        from ..running import running_with

        with running_with(loaded_by=get_host):  # `msprobe --help` loads no plugin for it
            return command()

    return run
