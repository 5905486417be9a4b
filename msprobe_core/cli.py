"""The ``msprobe`` command line.

Every expected failure is a :class:`~msprobe_core.errors.MsprobeError`; it is
turned into a one-line ``msprobe: error: …`` and an exit code here and
nowhere else (:func:`guarded`; ``--debug`` shows the traceback instead).

Exit codes: 0 success; 1 part of a run failed (:class:`~msprobe_core.errors.CompareFailed`)
or an internal error; 2 usage or input error; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

import click

from .errors import CompareFailed, Interrupted, MsprobeError, UsageError, os_reason

BUILTIN = "__builtin__"
log = logging.getLogger("msprobe")


def _optional_value(value: str | None) -> object:
    """``-am`` alone means the built-in mapping (True); with a value, a YAML path."""
    if value is None:
        return None
    return True if value == BUILTIN else value


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="msprobe-core", prog_name="msprobe")
@click.option("--debug", is_flag=True, help="Show Python tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Compare msprobe dumps of two training runs and find where they diverge."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


@cli.command("compare")
@click.option("-tp", "--target_path", required=True, type=click.Path(path_type=Path), help="Target (NPU) dump.json or step dir.")
@click.option("-gp", "--golden_path", required=True, type=click.Path(path_type=Path), help="Golden (bench) dump.json or step dir.")
@click.option("-o", "--output_path", type=click.Path(path_type=Path), default=Path("./output"), is_flag=False,
              flag_value="./output", show_default=True, help="Output directory.")
@click.option("--xlsx", is_flag=True, help="Write xlsx instead of csv.")
@click.option("-fm", "--fuzzy_match", is_flag=True, help="Match APIs whose call numbers differ.")
@click.option("-am", "--api_mapping", is_flag=False, flag_value=BUILTIN, default=None, help="Cross-framework API mapping [yaml].")
@click.option("-cm", "--cell_mapping", is_flag=False, flag_value=BUILTIN, default=None, help="Cell→Module mapping [yaml].")
@click.option("-dm", "--data_mapping", default=None, help="Per-row name mapping yaml.")
@click.option("-lm", "--layer_mapping", is_flag=False, flag_value=BUILTIN, default=None, help="Layer mapping yaml.")
@click.option("-da", "--diff_analyze", is_flag=True, help="Find the first divergent node.")
@click.option("--rank", is_flag=False, flag_value="", default=None, help="Kernel dump ranks (1,2,3); alone: all.")
@click.option("--step", default=None, help="Kernel dump steps (1,2,3).")
@click.option("-tensor_log", "--is_print_compare_log", "tensor_log", is_flag=True, help="Log every tensor compare.")
@click.option("--workers", type=int, default=None, help="Worker processes (default: all cores).")
@click.option("--executor", default=None, metavar="NAME",
              help="Where rank pairs and tensor chunks run: local (default) or dask (msprobe-dask).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Scheduler address for --executor dask (default: a local cluster).")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
@click.option("--force", is_flag=True, help="Replace result files left in the output dir by an earlier run.")
@click.option("--max_tensor_bytes", "max_tensor_bytes", default=None, metavar="SIZE",
              help="Refuse tensors larger than SIZE (e.g. 4G; 0 = no limit; default 16G or $MSPROBE_MAX_TENSOR_BYTES).")
@click.option("--output_format", "output_format", default=None, metavar="NAME",
              help="Result file format: csv (default), xlsx, or one a plugin adds (see 'msprobe plugins').")
@click.option("--report", "report_format", type=click.Choice(["html"]), default=None,
              help="Also write a self-contained HTML report (compare_report_<timestamp>.html) into the output dir.")
@click.option("--json-summary", "json_summary", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Write the run summary (verdict counts, worst rows, first divergence, files) as JSON.")
@click.option("--fail-on", "fail_on", type=click.Choice(["error", "warning"]), default=None,
              help="Exit with status 1 when any row has this verdict or a worse one (for CI).")
def compare_cmd(**kw: object) -> None:
    """Compare two dumps: -tp TARGET -gp GOLDEN (files or step directories)."""
    from .api import build_options
    from .engine import run_jobs
    from .logs import banner_end, setup_logging
    from .registry import get_host

    setup_logging(bool(kw["quiet"]))
    _set_tensor_cap(kw["max_tensor_bytes"])
    options = build_options(
        kw["output_path"],
        {
            "xlsx": kw["xlsx"],
            "output_format": kw["output_format"] or "csv",
            "fuzzy_match": kw["fuzzy_match"],
            "api_mapping": _optional_value(kw["api_mapping"]),
            "cell_mapping": _optional_value(kw["cell_mapping"]),
            "data_mapping": kw["data_mapping"],
            "layer_mapping": _optional_value(kw["layer_mapping"]),
            "diff_analyze": kw["diff_analyze"],
            "rank": kw["rank"],
            "step": kw["step"],
            "tensor_log": kw["tensor_log"],
            "workers": kw["workers"],
            "executor": kw["executor"],
            "scheduler": kw["scheduler"],
            "quiet": kw["quiet"],
            "force": kw["force"],
        },
    )
    host = get_host()
    if kw["output_format"] and kw["xlsx"] and kw["output_format"] != "xlsx":
        raise UsageError(f"--xlsx and --output_format {kw['output_format']} ask for different result formats")
    host.writer(options.output_format)  # an unknown format is a usage error before any work
    jobs = host.discover_jobs(kw["target_path"], kw["golden_path"], options)
    started = time.time()
    try:
        outcomes = run_jobs(jobs, options, host)
    except CompareFailed as exc:  # some ranks failed: still summarise (and report) what was written
        if exc.outcomes is None:
            raise
        from .finish import finish_run

        finish_run(exc.outcomes, options, report=kw["report_format"], json_summary=kw["json_summary"],
                   started=started)
        raise
    from .finish import finish_run
    from .tailbuild import finish_removals

    def announce() -> None:  # once the report and the JSON summary are written too
        if any(o.files for o in outcomes):
            banner_end(log)

    try:  # a side file of the split write is still being removed meanwhile (tailbuild.Tail.close)
        finish_run(outcomes, options, report=kw["report_format"], json_summary=kw["json_summary"],
                   fail_on=kw["fail_on"], started=started, announce=announce)
    finally:
        finish_removals()


def _add_report_command() -> None:
    from .report.command import report_cmd

    cli.add_command(report_cmd)


_add_report_command()


@cli.command("plugins")
def plugins_cmd() -> None:
    """List installed plugins and the hooks they implement (JSON)."""
    from .registry import get_host

    click.echo(json.dumps(get_host().describe(), indent=2))


def _add_merge_result_command() -> None:
    from .merge_result import merge_result_cmd

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


def _set_tensor_cap(value: object) -> None:
    """Check ``--max_tensor_bytes`` (or the env var) now, and hand it to worker processes via the env."""
    from .validation import MAX_TENSOR_BYTES_ENV, max_tensor_bytes, parse_byte_size

    if value is not None:
        try:
            parse_byte_size(str(value))
        except ValueError as exc:
            raise UsageError(f"--max_tensor_bytes: {exc}") from None
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


def guarded(run: object, *, debug: bool) -> int:
    """Call ``run()`` and turn whatever happens into an exit code and at most one stderr line.

    The one place where exceptions become messages: :class:`MsprobeError` gives
    ``msprobe: error: <file>: <problem>`` and its ``exit_code``; Ctrl-C gives 130
    and SIGTERM 143 (temporary result files are removed on the way out); a click
    usage error 2; any other exception is an internal error (exit 1) reported in
    one line. ``debug`` re-raises instead, so the traceback is shown.
    """
    previous = _Signals.install()
    unraisable = sys.unraisablehook
    stdout = sys.stdout
    console = sys.stdout = _Console(stdout)
    try:
        run()  # type: ignore[operator]
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return 2
    except (click.exceptions.Abort, KeyboardInterrupt):
        if debug and _Signals.received is None:
            raise
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
            raise
        click.echo(f"msprobe: error: {exc}", err=True)
        return exc.exit_code
    except MemoryError:
        if debug:
            raise
        click.echo("msprobe: error: out of memory (try fewer --workers or a lower --max_tensor_bytes)", err=True)
        return 1
    except BrokenPipeError:  # stdout closed early (e.g. piped into head): nothing more to say
        return 1
    except Exception as exc:  # a bug: still one line, the traceback with --debug
        if debug:
            raise
        click.echo(
            f"msprobe: internal error: {type(exc).__name__}: {_first_line(str(exc))} "
            "(please report it; --debug shows the traceback)",
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``msprobe`` console script; returns the exit code."""
    _escape_unencodable_output()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    from .legacy.cli import is_classic, main_classic

    if is_classic([a for a in args if a != "--debug"]):
        return main_classic([a for a in args if a != "--debug"], debug)
    bad = _unknown_option([a for a in args if a != "--debug"])
    if bad:
        click.echo(f"msprobe: error: unknown option '{bad}' (see 'msprobe --help')", err=True)
        return 2
    return guarded(lambda: cli.main(args=args, prog_name="msprobe", standalone_mode=False), debug=debug)
