"""Input validation shared by every loader: schemas, JSON paths, size limits and path confinement.

Everything a user (or a stranger's dump) hands us is checked here or by a loader
that uses these helpers, and every failure names the file, the JSON path of the
offending value and the problem, in one line:

    dump.json: $.data["Torch.add.0.forward"].input_args[0].dtype: must be a string, got list

What is validated where:

* **Document headers and small config files** are validated with the pydantic models of
  :mod:`msprobe_core.files.schemas` (import them from there, when used: pydantic is slow to import;
  a well-formed dump header is checked by :func:`header_fields` without them):
  :class:`DumpHeader` (the top level of ``dump.json``/``debug.json``, without
  ``data``) and :class:`NameMapping` (``-dm``). :func:`validate` runs a model (the core's, or a
  plugin's own, e.g. for the files of its options) and turns a
  :class:`pydantic.ValidationError` into an :class:`~msprobe_core.errors.MsprobeError`.
* **Dump entries** (100k+ per file) are *not* run through pydantic: the flattener in
  ``load/flatten.py`` type-checks each leaf inline at the cost of a few ``type() is``
  tests and asks :func:`find_json_path` for the path only when something is wrong.
* **Sizes**: :func:`max_tensor_bytes` is the per-tensor cap (``MSPROBE_MAX_TENSOR_BYTES``
  or ``--max_tensor_bytes``); JSON and YAML files have byte caps too.
* **Paths**: :func:`resolve_within` is the one helper every tensor loader uses to turn a
  ``data_name`` or kernel file name into a path inside its dump directory.
  :func:`check_tensor_file` refuses special files and files over the cap before a reader opens them.

Symlinks (decision, see ``docs/differences.md``): the paths given with ``-tp``/``-gp``
are followed even when they are or contain symlinks (a warning names the real
location); *below* them nothing may resolve outside the real dump directory.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, MappingError, MsprobeError, TensorReadError, UnsafePathError

__all__ = [
    "check_tensor_file",
    "check_within_dump",
    "confine",
    "dump_file_beside",
    "find_json_path",
    "json_path",
    "max_tensor_bytes",
    "parse_byte_size",
    "read_yaml",
    "resolve_within",
]

#: Env var holding the per-tensor byte cap (``16G``, ``512M``, ``1000000``; ``0`` = no cap).
MAX_TENSOR_BYTES_ENV = "MSPROBE_MAX_TENSOR_BYTES"
#: Default per-tensor cap: one decoded tensor may use at most this many bytes.
DEFAULT_MAX_TENSOR_BYTES = 16 * 1024**3
#: Largest mapping/config YAML we read (they are a few KB).
MAX_YAML_BYTES = 64 * 1024**2

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --------------------------------------------------------------------------- JSON paths
def json_path(parts: Iterable[object]) -> str:
    """``$.data["Torch.a.0.forward"].input_args[0]`` from ``("data", "Torch.a.0.forward", "input_args", 0)``."""
    out = ["$"]
    for p in parts:
        if isinstance(p, int) and not isinstance(p, bool):
            out.append(f"[{p}]")
        elif isinstance(p, str) and _IDENT.match(p):
            out.append(f".{p}")
        else:
            text = str(p).replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'["{_clip(text, 120)}"]')
    return "".join(out)


def find_json_path(root: Any, target: Any, prefix: Sequence[object] = (), max_nodes: int = 1_000_000) -> str:
    """The JSON path of the object ``target`` (found by identity) inside ``root``.

    Used only after a problem is found, so the hot path never builds paths.
    Falls back to the path of ``root`` itself when ``target`` is not found.
    """
    stack: list[tuple[Any, tuple[object, ...]]] = [(root, tuple(prefix))]
    seen = 0
    while stack and seen < max_nodes:
        node, parts = stack.pop()
        seen += 1
        if node is target:
            return json_path(parts)
        if isinstance(node, dict):
            stack.extend((v, (*parts, k)) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((v, (*parts, i)) for i, v in reversed(list(enumerate(node))))
    return json_path(prefix)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def describe(value: Any) -> str:
    """A short, one-line description of a JSON value for error messages."""
    kind = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value))
    if kind is None:
        kind = "number" if isinstance(value, (int, float)) else type(value).__name__
    if isinstance(value, (dict, list)):
        return kind
    return f"{kind} {_clip(repr(value), 40)}"


# --------------------------------------------------------------------------- dump.json / debug.json header
#: ``task`` values msprobe writes; only the first two can be compared.
COMPARABLE_TASKS = ("tensor", "statistics")


def header_fields(doc: Any) -> tuple[str, dict] | None:
    """``(task, data)`` of a well-formed dump header without pydantic, else None (then ``DumpHeader`` says why).

    Well formed is what :class:`~msprobe_core.files.schemas.DumpHeader` accepts, checked as strictly: ``task``
    a non-empty string; ``level``, ``framework``, ``dump_data_dir`` strings or null; ``data`` an object.
    """
    if not isinstance(doc, dict):
        return None
    task, data = doc.get("task"), doc.get("data")
    if type(task) is not str or not task or type(data) is not dict:
        return None
    for key in ("level", "framework", "dump_data_dir"):
        value = doc.get(key)
        if value is not None and type(value) is not str:
            return None
    return task, data


class _NoAliasLoader:  # built lazily: yaml is imported only when a YAML file is read
    cls: Any = None


def _safe_loader() -> Any:
    if _NoAliasLoader.cls is None:
        import yaml

        class Loader(yaml.SafeLoader):
            """``yaml.SafeLoader`` that refuses anchors/aliases (no 'billion laughs' expansion)."""

            def compose_node(self, parent: Any, index: Any) -> Any:
                if self.check_event(yaml.AliasEvent):
                    event = self.peek_event()
                    raise yaml.composer.ComposerError(
                        None, None, "YAML aliases (*name) are not accepted in msprobe files", event.start_mark
                    )
                return super().compose_node(parent, index)

        _NoAliasLoader.cls = Loader
    return _NoAliasLoader.cls


def read_yaml(path: str | Path, what: str, *, error: type[MsprobeError] = MappingError) -> Any:
    """Parse a YAML file safely (no tags, no aliases, bounded size) or raise ``error`` naming it."""
    import yaml

    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise error(f"{what} file does not exist", path=p) from None
    except OSError as exc:
        raise error(f"cannot access {what} file ({exc.strerror or exc})", path=p) from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{what} path is not a regular file", path=p)
    if st.st_size > MAX_YAML_BYTES:
        raise error(f"{what} file is {st.st_size} bytes, over the {MAX_YAML_BYTES}-byte limit", path=p)
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{what} file is not UTF-8 text (byte {exc.start})", path=p) from None
    except OSError as exc:
        raise error(f"cannot read {what} file ({exc.strerror or exc})", path=p) from None
    try:
        return yaml.load(text, Loader=_safe_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"malformed YAML{where}: {problem}", path=p) from None
    except RecursionError:
        raise error("YAML nesting is too deep", path=p) from None


# --------------------------------------------------------------------------- size limits
def check_byte_size(value: str) -> str:
    """An option's size (``16G``, ``512M``) as given, once :func:`parse_byte_size` takes it (else ``ValueError``)."""
    parse_byte_size(value)
    return value


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_byte_size(text: str | int) -> int:
    """``"16G"``/``"512MiB"``/``"1000"`` → bytes (binary multiples); raises ``ValueError``."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError("a size cannot be negative")
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"not a byte size: {text!r} (e.g. 16G, 512M, 1000000)")
    scale = 1024 ** "_kmgt".index((m.group(2) or "_").lower()) if m.group(2) else 1
    return int(float(m.group(1)) * scale)


def max_tensor_bytes() -> int | None:
    """The per-tensor byte cap: ``MSPROBE_MAX_TENSOR_BYTES`` (``0`` = none) or 16 GiB.

    An invalid value raises :class:`~msprobe_core.errors.InputError` (exit 2).
    """
    raw = os.environ.get(MAX_TENSOR_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_TENSOR_BYTES
    try:
        value = parse_byte_size(raw)
    except ValueError as exc:
        raise InputError(f"{MAX_TENSOR_BYTES_ENV}={raw!r}: {exc}") from None
    return value or None


# --------------------------------------------------------------------------- path confinement
def resolve_within(root: str | os.PathLike[str] | None, name: str, *, what: str = "data_name") -> Path:
    """``root/name`` resolved, refusing any name that leaves ``root``.

    Refused: empty names, NUL bytes, absolute paths, ``..`` that climbs out, and symlinks (of the file or of a
    directory on the way) that point outside the real ``root``. Raises :class:`~msprobe_core.errors.UnsafePathError`
    (a :class:`TensorReadError`, so only the row of that tensor fails).
    """
    if root is None:
        raise TensorReadError("the dump has no tensor directory (dump_tensor_data)")
    if not isinstance(name, str) or not name or "\x00" in name:
        raise UnsafePathError(f"{what} {_clip(repr(name), 80)} is not a file name")
    if os.path.isabs(name) or name.startswith(("/", "\\")):
        raise UnsafePathError(f"{what} '{_clip(name, 80)}' is an absolute path; refused")
    return confine(root, os.path.join(os.path.realpath(root), name), what=f"{what} '{_clip(name, 80)}'")


def confine(root: str | os.PathLike[str], path: str | os.PathLike[str], *, what: str = "file") -> Path:
    """The real path of ``path``, refusing one that resolves outside the real ``root`` (or to ``root`` itself).

    The check behind :func:`resolve_within`, for loaders that list a directory
    themselves (kernel dumps); raises :class:`~msprobe_core.errors.UnsafePathError`.
    """
    real_root = os.path.realpath(root)
    full = os.path.realpath(path)
    if full == real_root or os.path.commonpath([real_root, full]) != real_root:
        raise UnsafePathError(f"{what} resolves to {full}, outside the dump root {root}; refused")
    return Path(full)


def is_within(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` resolves to ``root`` or below it (both resolved)."""
    real_root = os.path.realpath(root)
    full = os.path.realpath(path)
    return os.path.commonpath([real_root, full]) == real_root


def check_within_dump(directory: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """The rule for every file of a dump (stack.json, construct.json, dump_tensor_data…): a symlink
    may not lead out of the dump's directory (:class:`~msprobe_core.errors.InputError`, exit 2).

    The dump directory itself may be reached through symlinks (the user named it); what lies
    below it must stay below it (see ``docs/differences.md``).
    """
    if os.path.islink(path) and not is_within(directory, path):
        raise InputError(f"{os.path.basename(path)} resolves to {os.path.realpath(path)}, outside the dump "
                         f"directory {directory}; refusing to read it", path=path)


def dump_file_beside(dump_json: str | os.PathLike[str], name: str) -> Path | None:
    """The file ``name`` next to ``dump_json`` (``stack.json``, ``construct.json``), or None when there is none.

    Checked by :func:`check_within_dump` first: a symlink out of the dump directory is refused.
    A ``name`` that is there but is no regular file (a symlink to ``/dev/zero``, a FIFO, a directory, a
    dangling link) is never opened (a device never ends, a FIFO blocks): one warning says it is ignored.
    """
    path = Path(dump_json).parent / name
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            _ignored(path, "a dangling link (its target does not exist)")
        return None
    except OSError as exc:
        _ignored(path, f"not accessible ({exc.strerror or exc})")
        return None
    if not stat.S_ISREG(st.st_mode):
        _ignored(path, f"{_file_kind(st.st_mode)}, not a regular file")
        return None
    check_within_dump(path.parent, path)
    return path


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a file"


def _ignored(path: Path, why: str) -> None:
    """The warning of a dump's side file (stack.json, construct.json) that is there but cannot be read."""
    import logging

    via = f" (a symbolic link to {os.readlink(path)})" if os.path.islink(path) else ""
    logging.getLogger("msprobe").warning("%s%s is %s; ignored, the compare goes on without it", path, via, why)


def check_tensor_file(path: str | os.PathLike[str], max_bytes: int | None) -> int:
    """Size of a tensor file after checking it is a regular file within the byte cap.

    Raises :class:`TensorReadError` for a missing file, a directory, FIFO or device
    (which would block or never end), and a file larger than ``max_bytes``.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise TensorReadError(f"{path}: tensor file does not exist") from None
    except OSError as exc:
        raise TensorReadError(f"{path}: cannot access tensor file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise TensorReadError(f"{path}: not a regular file")
    if max_bytes is not None and st.st_size > max_bytes:
        raise TensorReadError(
            f"{path}: file is {st.st_size} bytes, over the tensor limit of {max_bytes} bytes"
            f" (raise it with {MAX_TENSOR_BYTES_ENV} or --max_tensor_bytes)"
        )
    return st.st_size
