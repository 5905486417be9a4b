"""Stages talk through typed fields, not string keys (issue 33, "no side channels").

What one stage tells the next travels in a typed field of the dataclass that carries it (``DumpTable.unrecognised``,
``MatchResult.notes.pairing``, ``ResultTable.meta.unread_tensors``…); a plugin's own data goes under its name in
``plugin_data`` (docs/plugins.md, "A plugin's own data"). This check reads the source of the core and of the
first-party plugins: no subscript, ``.get``, ``.setdefault`` or ``.pop`` with a string key (a literal or a module's
string constant) on an attribute named ``extra``, ``meta`` or ``notes``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the trees checked: the core and every first-party plugin
TREES = [ROOT / "msprobe_core", *sorted(p for p in (ROOT / "plugins").glob("*/msprobe_*") if p.is_dir())]
#: the attributes that were string-keyed side channels
CHANNELS = frozenset({"extra", "meta", "notes"})
#: the dict methods that read or write by key
KEYED_METHODS = frozenset({"get", "setdefault", "pop"})
#: (module, key) still allowed, each with its reason
ALLOWED = {
    # the Python API's ``extra=`` values that name no option: a caller's value, read by the feature that owns it
    ("msprobe_core/default_plugins/diff_analyze/runner.py", "CONFIG_KEY"),
}


def _string_names(tree: ast.Module) -> set[str]:
    """The module-level names bound to a string constant (``KEY = "classic"``)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
              and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            names.add(node.target.id)
    return names


def _key(node: ast.expr, strings: set[str]) -> str | None:
    """The key ``node`` spells, when it is a string literal or a name of one (else ``None``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return repr(node.value)
    if isinstance(node, ast.Name) and (node.id in strings or node.id.isupper()):
        return node.id
    return None


def side_channels(source: str) -> list[tuple[int, str]]:
    """(line, key) of every string-keyed use of an ``extra``/``meta``/``notes`` attribute in ``source``."""
    tree = ast.parse(source)
    strings = _string_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr in CHANNELS:
            key = _key(node.slice, strings)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in KEYED_METHODS
              and isinstance(node.func.value, ast.Attribute) and node.func.value.attr in CHANNELS and node.args):
            key = _key(node.args[0], strings)
        else:
            continue
        if key is not None:
            found.append((node.lineno, key))
    return found


def _uses() -> list[tuple[str, int, str]]:
    out = []
    for tree in TREES:
        for path in sorted(tree.rglob("*.py")):
            module = path.relative_to(ROOT).as_posix()
            out += [(module, line, key) for line, key in side_channels(path.read_text(encoding="utf-8"))]
    return out


def test_no_stage_passes_a_string_keyed_value_through_extra_meta_or_notes():
    left = [u for u in _uses() if (u[0], u[2]) not in ALLOWED]
    assert not left, "string-keyed side channels (use a typed field, or plugin_data[<plugin name>]): " + ", ".join(
        f"{m}:{line} [{key}]" for m, line, key in left)


def test_every_allowed_use_still_exists():
    """An entry of ALLOWED whose use is gone is dropped from it, so that the list only shrinks."""
    seen = {(m, key) for m, _, key in _uses()}
    assert ALLOWED <= seen, f"no longer used, drop from ALLOWED: {sorted(ALLOWED - seen)}"


@pytest.mark.parametrize("code, key", [
    ('table.extra["unrecognised"] = []', "'unrecognised'"),
    ("x = ctx.meta.get(FILLS)", "FILLS"),
    ('KEY = "classic"\ndef f(o):\n    return o.extra.get(KEY)', "KEY"),
    ('match.notes.setdefault("attachments", []).append(1)', "'attachments'"),
    ("job.extra.pop(DIRS)", "DIRS"),
])
def test_the_check_finds_a_new_side_channel(code, key):
    assert [k for _, k in side_channels(code)] == [key]


@pytest.mark.parametrize("code", [
    "table.meta.attachments.append(x)",
    'table.plugin_data["kernel"]',
    'meta["shape"]',  # a local dict (a .npy header), not a stage's attribute
    "ctx.meta.plugin_data.get(PLUGIN)",
    "notes[i]",
])
def test_typed_fields_and_plugin_data_pass(code):
    assert side_channels(code) == []
