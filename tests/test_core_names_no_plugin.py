"""The core's source names no plugin's mode, format, column, option or distribution outside the known-plugins table.

What one plugin needs of the core (the kernel plugin's mode, its verdict column, the grammar of MindSpore's kernel
``.npy`` file names, the MindSpore plugin's mapping options, the classic ``compare.json``) is declared by that plugin
through a spec field and asked of the host; the table of the default plugin ``known_plugins``
(``msprobe_core/default_plugins/known_plugins/table.py``) is the one module that names the plugins (their
distributions, frameworks, options, layouts and command lines), for install hints.

The scan reads code, not prose: the string constants (docstrings left out) and identifiers of every Python module
of ``msprobe_core`` (from its syntax tree), and the page script ``report/assets/report.js`` without its comments.
Comments and docstrings may still give a framework as an example.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "msprobe_core"
#: the one module that names the plugins
TABLE = CORE / "default_plugins" / "known_plugins" / "table.py"

#: what a plugin brings, as code would spell it: modes, columns, frameworks, distributions, options, file names
_NAMES = (
    r"\bkernel\b", r"accuracy reached", r"mind_?spore", r"mindtorch", r"py_?torch", r"\btorch\b", r"\.npy\b",
    r"\b(?:api|cell|layer)_mapping\b", r"(?<![\w-])-(?:am|cm|lm)\b", r"kbyk", r"rank_\[", r"compare\.json",
    r"msprobe[-_](?:pytorch|mindspore|kernel|classic|dask|testing)\b", r"\bdask\b", r"\bclassic\b",
    r"\bpynative\b",  # a MindSpore mixed dump's folder: its discovery is the MindSpore plugin's
)
STRING_NAMES = re.compile("|".join(_NAMES), re.IGNORECASE)
#: an identifier naming a plugin's mode, framework or file (``MODE_KERNEL``, ``_KERNEL_FILE``, ``ApiMapping``,
#: ``CompareJson``…)
IDENTIFIER_NAMES = re.compile(
    r"kernel|mind_?spore|py_?torch|(?:^|_)torch(?:_|$)|(?:api|cell|layer)_?mapping|compare_?json", re.IGNORECASE)

#: (module, text found) the scan lets pass, each for the reason given
ALLOWED: dict[tuple[str, str], str] = {
    # the core's one safe reader of numpy's own file format, which every plugin reads tensors with
    # (msprobe_core.plugin.read_npy): its messages name the format it reads, not a plugin's file
    **{("files/npy_reader.py", m): "the core's .npy reader" for m in (".npy",)},
    # dump.json is the core's format; its non-tensor leaves spell three value types of the PyTorch dumper that
    # msprobe's own (framework-neutral) compare renders specially, and the flattener renders them as it does
    **{("load/flatten.py", m): "dump.json value types" for m in ("torch",)},
    # the summary orders the divergences of a mixed dump's parts by the labels the MindSpore plugin's jobs carry
    **{("default_plugins/summary/divergence.py", m): "a mixed dump's job labels" for m in ("pynative",)},
}


def _python_texts(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line, text, is an identifier) of every string constant but docstrings, and every identifier, of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = set()
    for node in ast.walk(tree):  # docstrings, and the bare strings that document attributes
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            prose.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            yield node.lineno, node.value, False
        elif isinstance(node, ast.Name):
            yield node.lineno, node.id, True
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr, True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name, True
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg, True
        elif isinstance(node, ast.alias):
            yield getattr(node, "lineno", 0), node.asname or node.name, True


_JS_COMMENT = re.compile(r"/\*.*?\*/|(?:^|(?<=[\s;{}(),]))//[^\n]*", re.DOTALL)


def _js_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line, code) of a script with its comments blanked out (line numbers kept)."""
    text = _JS_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text(encoding="utf-8"))
    yield from enumerate(text.splitlines(), start=1)


def _found(rel: str, text: str, identifier: bool) -> list[str]:
    pattern = IDENTIFIER_NAMES if identifier else STRING_NAMES
    hits = [m.group(0) for m in pattern.finditer(text)]
    return [h for h in hits if (rel, h.lower()) not in ALLOWED]


def plugin_names_in_core(core: Path = CORE) -> list[str]:
    """``module:line: text`` for every plugin name the core's code spells outside the known-plugins table."""
    out = []
    for path in sorted(core.rglob("*.py")):
        if path == core / TABLE.relative_to(CORE):
            continue
        rel = path.relative_to(core).as_posix()
        for line, text, identifier in _python_texts(path):
            if _found(rel, text, identifier):
                out.append(f"{rel}:{line}: {text[:100]!r}")
    for path in sorted(core.rglob("*.js")):
        rel = path.relative_to(core).as_posix()
        for line, code in _js_lines(path):
            if _found(rel, code, False):
                out.append(f"{rel}:{line}: {code.strip()[:100]!r}")
    return out


def test_the_core_names_no_plugin_outside_the_known_plugins_table():
    found = plugin_names_in_core()
    assert not found, "the core names a plugin's mode, format, option or distribution:\n" + "\n".join(found)


def test_the_allowlist_is_still_needed():
    """Each allowed text still occurs where it is allowed (an entry no longer needed is removed)."""
    for (rel, text), why in ALLOWED.items():
        path = CORE / rel
        found = [t for _, t, ident in _python_texts(path) for h in
                 (IDENTIFIER_NAMES if ident else STRING_NAMES).finditer(t) if h.group(0).lower() == text]
        assert found, f"{rel}: {text!r} ({why}) no longer occurs: drop it from ALLOWED"


@pytest.mark.parametrize(("source", "caught"), [
    ('MODE_KERNEL = "kernel"\n', True),  # a plugin's mode, and the identifier naming it
    ('VERDICT = "Accuracy Reached or Not"\n', True),  # a plugin's verdict column
    ('STAMP = re.compile(r"\\.(\\d+)\\.npy$")\n', True),  # a plugin's file names
    ('def f(options):\n    return options.api_mapping\n', True),  # a plugin's option
    ('HINT = "pip install msprobe-mindspore"\n', True),  # a distribution
    ('class CompareJson:\n    pass\n', True),  # a plugin's file, as a schema
    ('def f():\n    """Reads a MindSpore dump, e.g. a kernel one."""\n', False),  # prose may give examples
    ('# the kernel hands a signal to any thread\nx = 1\n', False),  # comments are prose
])
def test_the_scan_catches_code_and_leaves_prose(tmp_path: Path, source: str, caught: bool):
    core = tmp_path / "core"
    (core / "report" / "assets").mkdir(parents=True)
    (core / "mod.py").write_text("import re\n" + source)
    (core / "report" / "assets" / "page.js").write_text('/* a kernel dump */\nvar x = 1; // mindspore\n')
    assert bool(plugin_names_in_core(core)) is caught


def test_the_scan_reads_the_page_script_without_its_comments(tmp_path: Path):
    core = tmp_path / "core"
    core.mkdir()
    (core / "page.js").write_text('/* Accuracy Reached or Not */\nvar a = 1; // kernel\nvar b = "kernel";\n')
    assert plugin_names_in_core(core) == ["page.js:3: 'var b = \"kernel\";'"]
