"""The one place where exceptions become a message and an exit code (:func:`guarded`).

Every expected failure is a :class:`~msprobe_core.errors.MsprobeError`; it is turned into a
one-line ``msprobe: error: …`` and its exit code here and nowhere else (``--debug`` shows the
traceback too). Exit codes: 0 success; 1 part of a run failed
(:class:`~msprobe_core.errors.CompareFailed`) or an internal error; 2 usage or input error;
130 interrupted (Ctrl-C); 143 terminated (SIGTERM); 129 hung up (SIGHUP).
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import traceback

import click

from ..console.streams import TolerantStream
from ..errors import Interrupted, MsprobeError, os_reason

#: click's "no arguments: show the help" (click >= 8.2; nothing to catch before)
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


def usage_error_line(message: str, command_path: str = "msprobe") -> str:
    """A usage error as every error is shown: ``msprobe: error: <message> (see '<command> --help')``."""
    message = message.strip().rstrip(".")
    if message[:1].isupper() and message[1:2].islower():  # click's sentences; keep "TARGET", "-tp"
        message = message[0].lower() + message[1:]
    return f"msprobe: error: {message} (see '{command_path} --help')"


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
    console = sys.stdout = TolerantStream(stdout)  # type: ignore[assignment]
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
        return _interrupted(debug)
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
        if caused_by_interrupt(exc):  # Python wrapped the interrupt (a class body's __set_name__: RuntimeError)
            return _interrupted(debug)
        if debug:
            traceback.print_exc()
        click.echo(_bug_line(exc, debug), err=True)
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


def _interrupted(debug: bool) -> int:
    """The exit code and line of an interrupted run: Ctrl-C 130, SIGTERM 143, SIGHUP 129."""
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


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` wraps an interrupt: a ``KeyboardInterrupt`` (a signal's, see :class:`_Signals`) as its cause
    or context, as Python does when one strikes inside ``__set_name__`` while a class is made (an import)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, KeyboardInterrupt):
            return True
        link = link.__cause__ or link.__context__
    return False


def _bug_line(exc: Exception, debug: bool) -> str:
    """The one line for an unexpected exception: a third-party plugin's bug is named as that plugin's."""
    from ..host.blame import culprit_of
    from ..host.registry import current_host

    what = f"{type(exc).__name__}: {_first_line(str(exc))}"
    traceback_hint = "the traceback above" if debug else "--debug shows the traceback"
    culprit = culprit_of(exc, current_host())
    if culprit is not None and not culprit.first_party:
        return (f"msprobe: error: plugin '{culprit.distribution}': {what} (at {culprit.where}; a bug in that "
                f"plugin, report it to its authors; {traceback_hint})")
    where = f" in {culprit.distribution} ({culprit.where})" if culprit is not None else ""
    return (f"msprobe: internal error{where}: {what} "
            + ("(please report it with the traceback above)" if debug
               else "(please report it; --debug shows the traceback)"))


def _say(line: str) -> None:
    """One line on stderr, if it takes it."""
    try:
        click.echo(line, err=True)
    except OSError:
        pass


def _quiet_unraisable(unraisable: object) -> None:
    """``sys.unraisablehook`` while an interrupted run unwinds: finaliser noise is dropped."""


def escape_unencodable_output() -> None:
    """Print what the console cannot encode (a lone surrogate in a name read from a dump) as an escape, not fail."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # not a text stream we may change
            pass
