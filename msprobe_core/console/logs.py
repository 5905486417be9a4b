"""Console logging in msprobe's line format: ``YYYY-mm-dd HH:MM:SS (<pid>) [LEVEL] message``."""

from __future__ import annotations

import logging
import sys

_FORMAT = "%(asctime)s (%(process)d) [%(levelname)s] %(message)s"
_DATEFMT = "%Y-%m-%d %H:%M:%S"


class EscapeArgs(logging.Filter):
    """Escape line breaks and control characters in a record's arguments (names read from dumps).

    The format string may span lines on purpose; the values put into it come
    from files we do not trust, and a name with a newline must not forge a log line.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from ..errors import one_line

        args = record.args
        if isinstance(args, tuple) and args:
            record.args = tuple(one_line(a) if isinstance(a, str) else one_line(str(a)) if isinstance(
                a, BaseException) else a for a in args)
        return True


def setup_logging(quiet: bool = False, stream=None) -> None:
    """Send msprobe's log to stdout (errors only with ``quiet``)."""
    logger = logging.getLogger("msprobe")
    for h in list(logger.handlers):
        logger.removeHandler(h)
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(logging.Formatter(_FORMAT, _DATEFMT))
    handler.addFilter(EscapeArgs())
    logger.addHandler(handler)
    logger.setLevel(logging.ERROR if quiet else logging.INFO)
    logger.propagate = False


def banner_end(log: logging.Logger) -> None:
    """The three-line banner msprobe prints after a successful compare."""
    log.info("*" * 84)
    log.info("*" + "msprobe compare ends successfully.".center(82) + "*")
    log.info("*" * 84)
