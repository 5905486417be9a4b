"""The public module for plugin authors, ``msprobe_core.plugin``: every name exists, is documented, and costs nothing
until used.

* each name of ``__all__`` resolves to the object of its home module (the module itself for ``result_columns``);
* the names type checkers see (its ``TYPE_CHECKING`` imports) are exactly ``__all__``;
* docs/plugins.md "What a plugin imports" names every one of them;
* a plugin that takes what registration needs (``hookimpl``, the specs, options, errors, the model, the columns)
  loads none of the stages: no numpy, pandas, click or pydantic in a fresh process.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import msprobe_core
import msprobe_core.plugin as public

REPO = Path(__file__).resolve().parents[1]


def test_every_public_name_is_its_home_object():
    assert len(public.__all__) == len(set(public.__all__)) > 50
    for name in public.__all__:
        value = getattr(public, name)
        if isinstance(value, types.ModuleType):
            assert value is importlib.import_module(f"msprobe_core.{name}")
            continue
        home = importlib.import_module(public._HOME_OF[name], "msprobe_core")
        assert value is getattr(home, name), name
    assert public.hookimpl is msprobe_core.hookimpl
    with pytest.raises(AttributeError, match="no attribute 'load_dump_file'"):
        public.load_dump_file  # noqa: B018 - not public: the loader is the built-in plugin's


def test_the_type_checking_imports_are_the_public_names():
    tree = ast.parse(Path(public.__file__).read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    seen = [a.asname or a.name for node in block.body if isinstance(node, ast.ImportFrom) for a in node.names]
    assert sorted(seen) == public.__all__
    homes = {f".{node.module}" for node in block.body if isinstance(node, ast.ImportFrom) and node.module}
    assert homes - {"."} >= set(public._HOMES)


def test_the_docs_name_every_public_name():
    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("## What a plugin imports", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`(\w+)`", section))
    assert not set(public.__all__) - documented, "document these in docs/plugins.md, What a plugin imports"


REGISTRATION = ("hookimpl", "FrameworkSpec", "DtypeInfo", "MapperSpec", "MetricSpec", "TensorMetricSpec",
                "WriterSpec", "VerdictSpec", "OptionSpec", "FLAG", "UsageError", "InputError", "CompareOptions",
                "DumpTable", "MatchResult", "MODE_TENSOR", "result_columns", "CommOpSpec", "ExecutorSpec")


def test_registering_a_plugin_loads_none_of_the_stages():
    code = (f"import json, sys\nimport msprobe_core.plugin as P\nfor n in {REGISTRATION!r}: getattr(P, n)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'pandas', 'click', 'pydantic', 'yaml', 'openpyxl') or m.startswith('msprobe_core.'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                       timeout=120).stdout)
    heavy = [m for m in loaded if not m.startswith("msprobe_core.")]
    stages = [m for m in loaded if m.startswith("msprobe_core.") and m.split(".")[1] in ("load", "match", "metrics", "verdicts", "write", "pipeline",
                                                       "run", "report", "text")]
    assert not heavy and not stages, (heavy, stages)
