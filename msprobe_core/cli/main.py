"""The ``msprobe`` command line.

Every expected failure is a :class:`~msprobe_core.errors.MsprobeError`; it is
turned into a one-line ``msprobe: error: …`` and an exit code here and
nowhere else (:func:`guarded`; ``--debug`` shows the traceback too).

Exit codes: 0 success; 1 part of a run failed (:class:`~msprobe_core.errors.CompareFailed`)
or an internal error; 2 usage or input error; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM).
"""

from __future__ import annotations

import errno
import inspect
import json
import logging
import os
import signal
import sys
import time
import traceback

import click

from ..errors import CompareFailed, Interrupted, MsprobeError, os_reason

log = logging.getLogger("msprobe")
#: click's "no arguments: show the help" (click >= 8.2; nothing to catch before)
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class _MsprobeGroup(click.Group):
    """The ``msprobe`` group: the built-in commands, and those plugins add (``msprobe_register_commands``).

    Plugin commands are looked up only when a name is not a built-in one: loading the
    plugins is left to the commands that need them (``msprobe --help`` stays light).
    """

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name and not cmd_name.startswith("-"):
            from ..host.registry import get_host

            command = get_host().register_commands(tuple(self.commands)).get(cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Every built-in command with the whole first paragraph of its help."""
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


_EPILOG = """\b
Classic interface (msprobe 8.3.3 tables, highlights and advisor; from the msprobe-classic plugin):
  msprobe -f pytorch|mindspore compare -i compare.json [-o OUT] [-s] [-c] [-f] ...
  (options: 'msprobe -f pytorch compare --help')

--debug may go anywhere on the command line; the exit code stays the same.
Plugins may add commands of their own; 'msprobe plugins' lists the installed plugins.
Run 'msprobe COMMAND --help' for the options of a command."""


@click.group(cls=_MsprobeGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EPILOG)
@click.version_option(package_name="msprobe-core", prog_name="msprobe")
@click.option("--debug", is_flag=True, help="Show the Python traceback of an error (before or after the command).")
def cli(debug: bool) -> None:
    """Compare msprobe dumps of two training runs and find where they diverge."""


class _CompareCommand(click.Command):
    """``msprobe compare``: one option per declaration of the plugin host (``msprobe_core.options``).

    The options are built when first needed (parsing, ``--help``), which loads the
    plugins; the core's come first, then each plugin's under its own heading.
    """

    def __init__(self) -> None:
        self._declared: list[click.Parameter] | None = None
        super().__init__("compare", callback=compare_cmd, help=compare_cmd.__doc__,
                         context_settings={"help_option_names": ["-h", "--help"]})

    @property  # type: ignore[override]
    def params(self) -> list[click.Parameter]:
        if self._declared is None:
            from ..host.registry import get_host
            from ..options import click_option

            self._declared = [click_option(spec) for spec in get_host().options.specs]
        return self._declared

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._declared = list(value) if value else None

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from ..host.registry import BUILTIN_PLUGIN, get_host

        host = get_host()
        groups: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            spec = host.options.get(param.name or "")
            owner = "" if spec is None or spec.plugin == BUILTIN_PLUGIN else host.distribution_of(spec.plugin)
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
    """Compare two dumps: -tp TARGET -gp GOLDEN (files or step directories)."""
    from ..console.logs import banner_end, setup_logging
    from ..console.progress import run_status, stage
    from ..host.registry import get_host
    from ..run.engine import run_jobs

    setup_logging(bool(kw["quiet"]))
    click.get_current_context().with_resource(run_status("msprobe compare", quiet=bool(kw["quiet"])))
    host = get_host()
    values = host.options.from_cli(kw)  # a bad value: one line naming the flag
    _set_tensor_cap(values["max_tensor_bytes"])
    options = host.build_options(values, given=_given_options(click.get_current_context(), kw))
    host.writer(options.output_format)  # an unknown format is a usage error before any work
    stage("find the dumps")
    jobs = host.discover_jobs(values["target"], values["golden"], options)
    started = time.time()
    try:
        outcomes = run_jobs(jobs, options, host)
    except CompareFailed as exc:  # some ranks failed: still summarise (and report) what was written
        if exc.outcomes is None:
            raise
        from ..report.finish import finish_run

        finish_run(exc.outcomes, options, report=values["report"], json_summary=values["json_summary"],
                   started=started)
        raise
    from ..report.finish import finish_run
    from ..write.tailbuild import finish_removals

    def announce() -> None:  # once the report and the JSON summary are written too
        if any(o.files for o in outcomes):
            banner_end(log)

    try:  # a side file of the split write is still being removed meanwhile (tailbuild.Tail.close)
        finish_run(outcomes, options, report=values["report"], json_summary=values["json_summary"],
                   fail_on=values["fail_on"], started=started, announce=announce)
    finally:
        finish_removals()


cli.add_command(_CompareCommand())


def _add_report_command() -> None:
    from ..report.command import report_cmd

    cli.add_command(report_cmd)


_add_report_command()


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def plugins_cmd(as_json: bool) -> None:
    """List installed plugins, their versions and the hooks they implement (a table; JSON with --json)."""
    from ..host.registry import get_host

    described = get_host().describe()
    if as_json:
        click.echo(json.dumps(described, indent=2))
        return
    from .plugin_table import plugin_table

    click.echo(plugin_table(described))


def _add_merge_result_command() -> None:
    from ..report.merge_result import merge_result_cmd

    cli.add_command(merge_result_cmd)


_add_merge_result_command()


def _unknown_option(args: list[str]) -> str | None:
    """The first option token the chosen sub-command does not know (click would split ``-fr`` into ``-f r``)."""
    if not args or args[0] not in cli.commands:
        return None
    command = cli.commands[args[0]]
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


def usage_error_line(message: str, command_path: str = "msprobe") -> str:
    """A usage error as every error is shown: ``msprobe: error: <message> (see '<command> --help')``."""
    message = message.strip().rstrip(".")
    if message[:1].isupper() and message[1:2].islower():  # click's sentences; keep "TARGET", "-tp"
        message = message[0].lower() + message[1:]
    return f"msprobe: error: {message} (see '{command_path} --help')"


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


class _Signals:
    """SIGTERM and SIGHUP handling of the CLI process: unwind like Ctrl-C (temporary files removed), exit 128+N.

    SIGHUP is what a closed terminal or a dropped ssh session sends: left at its default
    action it would kill the process on the spot, leaving its hidden temporary files.
    """

    received: int | None = None
    owner_pid: int = 0
    HANDLED = ("SIGTERM", "SIGHUP")

    @classmethod
    def on_term(cls, signum: int, frame: object) -> None:
        if os.getpid() != cls.owner_pid:  # a forked worker: die as the default action would
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        cls.received = signum
        raise KeyboardInterrupt

    @classmethod
    def install(cls) -> dict[int, object]:
        cls.received = None
        cls.owner_pid = os.getpid()
        previous: dict[int, object] = {}
        for name in cls.HANDLED:
            signum = getattr(signal, name, None)
            if signum is None:  # no SIGHUP on Windows
                continue
            try:
                current = signal.getsignal(signum)
                if signum != signal.SIGTERM and current == signal.SIG_IGN:
                    continue  # nohup: the user asked for the run to survive a hang-up
                previous[signum] = signal.signal(signum, cls.on_term)
            except ValueError:  # not the main thread: leave signals alone
                break
        return previous

    @staticmethod
    def restore(previous: dict[int, object]) -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


class _Console:
    """``sys.stdout`` while a command runs: a console that stops taking output does not change the outcome.

    The results are files; what is printed only reports on them. A closed pipe (``| head``),
    a full device (``> /dev/full``) or a dropped terminal makes writes fail: the first failure
    is kept (:attr:`failed`), the descriptor is pointed at ``/dev/null`` (so that the
    interpreter's last flush at exit cannot fail either) and later output is dropped.
    """

    def __init__(self, stream: object) -> None:
        self._stream = stream
        self.failed: OSError | None = None

    def write(self, text: str) -> int:
        if self.failed is None:
            try:
                return self._stream.write(text)  # type: ignore[attr-defined, no-any-return]
            except OSError as exc:
                self._fail(exc)
        return len(text)

    def flush(self) -> None:
        if self.failed is None:
            try:
                self._stream.flush()  # type: ignore[attr-defined]
            except OSError as exc:
                self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        self.failed = exc
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())  # type: ignore[attr-defined]
            os.close(null)
        except (OSError, ValueError, AttributeError):  # not a real descriptor (a test's capture)
            pass

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _first_line(text: str, limit: int = 300) -> str:
    line = (text.strip().splitlines() or [""])[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def guarded(run: object, *, debug: bool, command_path: str = "msprobe") -> int:
    """Call ``run()`` and turn whatever happens into an exit code and at most one stderr line.

    The one place where exceptions become messages: :class:`MsprobeError` gives
    ``msprobe: error: <file>: <problem>`` and its ``exit_code``; Ctrl-C gives 130
    and SIGTERM 143 (temporary result files are removed on the way out); a click
    usage error ``msprobe: error: <problem> (see '<command> --help')`` and 2; any
    other exception is an internal error (exit 1) reported in one line. ``debug``
    prints the traceback first; the message and the exit code stay the same.
    ``command_path`` names the command whose help a usage error points to when click does not say.
    """
    previous = _Signals.install()
    unraisable = sys.unraisablehook
    stdout = sys.stdout
    console = sys.stdout = _Console(stdout)
    try:
        run()  # type: ignore[operator]
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except _NO_ARGS_IS_HELP as exc:  # "msprobe" alone: the help
        exc.show()
        return 2
    except click.UsageError as exc:
        if debug:
            traceback.print_exc()
        path = exc.ctx.command_path if exc.ctx is not None else command_path
        click.echo(usage_error_line(exc.format_message(), path), err=True)
        return 2
    except click.ClickException as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"msprobe: error: {exc.format_message()}", err=True)
        return 2
    except (click.exceptions.Abort, KeyboardInterrupt):
        if debug and _Signals.received is None:
            traceback.print_exc()
        # objects half-built when the signal struck (a zip being opened…) complain from their
        # finalisers as the traceback is released; the run is over, keep stderr to one line
        sys.unraisablehook = _quiet_unraisable
        if _Signals.received is not None:
            what = "hung up (SIGHUP)" if _Signals.received != signal.SIGTERM else "terminated (SIGTERM)"
            try:
                click.echo(f"msprobe: {what}; unfinished result files were removed", err=True)
            except OSError:  # a hung-up terminal takes no more output
                pass
            return 128 + _Signals.received
        click.echo("msprobe: interrupted (Ctrl-C); unfinished result files were removed", err=True)
        return Interrupted.exit_code
    except MsprobeError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"msprobe: error: {exc}", err=True)
        return exc.exit_code
    except MemoryError:
        if debug:
            traceback.print_exc()
        click.echo("msprobe: error: out of memory (try fewer --workers or a lower --max_tensor_bytes)", err=True)
        return 1
    except BrokenPipeError:  # stdout closed early (e.g. piped into head): nothing more to say
        return 1
    except Exception as exc:  # a bug: still one line, the traceback with --debug
        if debug:
            traceback.print_exc()
        click.echo(
            f"msprobe: internal error: {type(exc).__name__}: {_first_line(str(exc))} "
            + ("(please report it with the traceback above)" if debug
               else "(please report it; --debug shows the traceback)"),
            err=True,
        )
        return 1
    finally:
        _Signals.restore(previous)
        sys.stdout = stdout
        if console.failed is not None and console.failed.errno != errno.EPIPE:
            _say(f"msprobe: warning: standard output stopped taking output ({os_reason(console.failed)}); "
                 "what was printed after that is lost")
        if sys.unraisablehook is _quiet_unraisable:
            import gc

            gc.collect()
            sys.unraisablehook = unraisable
    return 0


def _say(line: str) -> None:
    """One line on stderr, if it takes it."""
    try:
        click.echo(line, err=True)
    except OSError:
        pass


def _quiet_unraisable(unraisable: object) -> None:
    """``sys.unraisablehook`` while an interrupted run unwinds: finaliser noise is dropped."""


def _escape_unencodable_output() -> None:
    """Print what the console cannot encode (a lone surrogate in a name read from a dump) as an escape, not fail."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # not a text stream we may change
            pass


def _foreign(args: list[str]) -> bool:
    """Whether the core cannot parse ``args`` itself, so that a plugin may claim it (``msprobe_claim_command_line``)."""
    if not args:
        return False
    if args[0].startswith("-"):
        return args[0].split("=", 1)[0] not in _GROUP_OPTIONS
    return args[0] in cli.commands and _unknown_option(args) is not None


#: the options of the ``msprobe`` group itself (anything else before a command is not msprobe's syntax)
_GROUP_OPTIONS = ("-h", "--help", "--version")


def _is_classic_form(args: list[str]) -> bool:
    """``msprobe -f FRAMEWORK compare …`` or ``msprobe compare -i …``: msprobe 8.3.3's command line."""
    if args[0] in ("-f", "--framework") or args[0].startswith("--framework="):
        return True
    return args[0] == "compare" and any(a in ("-i", "--input_path") or a.startswith("--input_path=") for a in args)


#: command-line forms of msprobe that a plugin distribution provides: (test, what the form is, distribution),
#: for a clear error when that distribution is not installed
PLUGIN_FORMS = (
    (_is_classic_form, "the classic interface ('msprobe -f FRAMEWORK compare -i compare.json')", "msprobe-classic"),
)


def _missing_plugin(args: list[str]) -> str | None:
    """The error line for a command line whose form a plugin that is not installed provides (else ``None``)."""
    for test, form, distribution in PLUGIN_FORMS:
        if test(args):
            return f"msprobe: error: {form} is not installed: it comes with the {distribution} plugin " \
                   f"(pip install {distribution})"
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``msprobe`` console script; returns the exit code."""
    _escape_unencodable_output()
    args, debug = split_debug(list(sys.argv[1:] if argv is None else argv))
    if args[:1] == ["compare"] or (args and args[0].startswith("-") and args[0] not in _GROUP_OPTIONS):
        # knowing compare's flags, or which plugin claims the command line, loads the plugins: say what
        # goes wrong there as compare would
        from ..console.logs import setup_logging

        setup_logging(bool({"-q", "--quiet"} & set(args)))
    if _foreign(args):
        from ..host.registry import get_host

        claim = get_host().claim_command_line(args)
        if claim is not None:
            return guarded(claim.run, debug=debug, command_path=claim.command_path)
        missing = _missing_plugin(args)
        if missing:
            click.echo(missing, err=True)
            return 2
    bad = _unknown_option(args)
    if bad:
        click.echo(usage_error_line(f"no such option '{bad}'", f"msprobe {args[0]}"), err=True)
        return 2
    path = f"msprobe {args[0]}" if args and args[0] in cli.commands else "msprobe"
    return guarded(lambda: cli.main(args=args, prog_name="msprobe", standalone_mode=False), debug=debug,
                   command_path=path)
