"""The public module for plugin authors, ``msprobe_core.plugin``: every name exists, is documented, and costs nothing
until used.

* at most 120 names, each documented where it is defined (a docstring; a ``#:`` comment for a constant);
* each name of ``__all__`` resolves to the object of its home module (the module itself for ``result_columns``);
* the names type checkers see (its ``TYPE_CHECKING`` imports) are exactly ``__all__``;
* docs/plugins.md "What a plugin imports" names every one of them;
* a plugin that takes what registration needs (``hookimpl``, the specs, options, errors, the model, the columns)
  loads none of the stages: no numpy, pandas, click or pydantic in a fresh process.
"""

from __future__ import annotations

import ast
import importlib
import inspect
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
            assert value is importlib.import_module(public._MODULES[name], "msprobe_core")
            continue
        home = importlib.import_module(public._HOME_OF[name], "msprobe_core")
        assert value is getattr(home, name), name
    assert public.hookimpl is msprobe_core.hookimpl
    with pytest.raises(AttributeError, match="no attribute 'load_dump_file'"):
        public.load_dump_file  # noqa: B018 - not public: the pure-Python loader is the module dump_json's


#: the most names the stable plugin API may have (issue 22: specs, contexts, data model, errors, safe readers;
#: issue 33: the default plugins use only this module, so what they share with the core is public too (the chunked
#: strategy's index protocol a third-party loader implements, what a strategy that builds in parts needs), and the
#: first-party plugins left msprobe_core.unstable for it, all but the classic plugin's reuse of the dump.json walk:
#: 146 names then; the run-finished hooks, their finished run, summary and partials; the report and merge_result
#: plugins' output refusals, the run's host and hierarchy sources, the cells' and numbers' spelling: 163; the load's
#: accelerators as default plugins: pair_loading's forked child and table columns, fast_scan's dump.json vocabulary
#: (the dialects' member and field sets, the row helpers, the pure-Python loader it falls back to, the C scanner): 181;
#: the tensor metric engine as the default plugin tensor_metrics: the run's executor and the read buffers it reuses: 184;
#: the rank pairs run at once as the default plugin parallel_jobs: a worker's task makes its executor and host the
#: current ones, its job's summary partial, the pairs' bytes for its progress: 188;
#: the summary and the report without exceptions to that contract: the gc pause, the dumps' unrecognised records,
#: a column's CSV spelling and its lean coded column, the verdict rules' messages: 193;
#: tensor_metrics' metric functions moved into it, the kernel plugin asks for them through msprobe_compare_tensors: 192;
#: the plugin authors' test fixtures left the core for their own distribution, msprobe-testing, on this module alone:
#: the process-wide host to put back after a test, and the command line run in-process: 194;
#: the xlsx writer moved into its default plugin, which takes the float spelling and the write errors (five names
#: out, two in): 191;
#: the sweep of killed runs' leftovers as the default plugin sweep: the module of the shapes of the names live
#: writers give their working files, which the sweep recognises: 192;
#: the statistics metric set and msprobe's verdict rule became default plugins, which read the
#: dumped statistics through the classification of a statistics cell, the module stat_cells: 193;
#: the chunked plugin off the core's private modules: what a strategy's finish builds, returns and
#: writes under, the core CSV's part-wise spelling and part size, the column-wide facts a part is built with, the side
#: directory of its child (through the module leftovers, public for the sweep): 199;
#: the parts of the core's dump.json reader that only fast_scan's C scanner reads by (the dialects' member and field
#: sets, the row helpers, the pure-Python loader it falls back to, the C scanner, the block size, and the summary's
#: merge of the unrecognised records) grouped as one module, dump_json, instead of thirteen loose names: 187;
#: three more groups that only default plugins use, each given as its module: sequence_alignment (-fm and --auto-map),
#: yaml_names (--auto-map's -dm file), output_refusals (the report command's): 181;
#: the per-entry stack of a target read in chunks moved into the chunked plugin (entry_stacks out): 180;
#: the directory listing with the core's one-line error, which the MindSpore plugin's mixed-dump discovery had
#: copied: 181;
#: libraries that only default plugins used moved into the plugin that owns them, the others import them from there:
#: the sequence alignment into fuzzy (sequence_alignment out), the YAML spelling of a -dm file's names into automap
#: (yaml_names out), the differences of form into msprobe_verdicts, the summary and -da import them from there
#: (verdict_forms out), as its messages, which the summary reads (verdict_messages out), the reader of construct.json
#: into diff_analyze, --auto-map imports it from there (load_construct out), and -dm's check of an --auto-map file's
#: two-programs line into data_mapping (declares_two_programs out), --step's parse of its ids into steps (parse_ids,
#: check_ids out): 173; the watched forked child moved into the default plugin forking, whose module chunked
#: and pair_loading import as a sibling's (the module forking out), and the core's removal of side files by a thread
#: that chunked's children use (remove_later in): 173; the decorator of a hook spec, for a plugin that declares the
#: hooks only it calls (msprobe_add_hookspecs, pytest's pytest_addhooks: tensor_metrics' msprobe_tensor_rows_compared,
#: summary's msprobe_mapping_options): 174;
#: the output refusals moved into the summary, whose
#: --json-summary uses them, msprobe report imports them from there (output_refusals out), as the parse of a share,
#: which only --min-matched reads (parse_share out): 172; the classic plugin's reuse of the dump.json walk, the last
#: names of msprobe_core.unstable, became public and that module went (issue 33 item 5: parse_header, walk_members,
#: Flattener, FieldProblem in): 176;
#: the member-by-member stack.json reader moved into the chunked plugin, which the load asks for an index's stack
#: through msprobe_read_index_stack (read_stack_records out; its streamed parse joins the module dump_json): 175;
#: the step of a result label moved into the summary's steps view, its only user (step_label out): 174; the statistics column held as arrays moved into fast_scan, the plugin
#: that makes it, and the others know it by its methods; the list-like base it builds on, as a third party's lean
#: column would, became public instead (StatCells out, RangeSequence in); the coded column of numbers moved into
#: statistics_metrics, the plugin that makes it, and the summary and the verdict rule know it by its methods; the
#: base of a lean text column became public instead (CodedTextColumn out, TextColumn in): 174; the listing of 'msprobe plugins' moved from the host into the default
#: plugin plugins_command, which tells the default plugins (listed as such, and as off) by their names
#: (default_plugin_names in): 175; a lean column of numbers hands the CSV writer its float64 values for the C join to
#: spell, as the statistics columns of fast_scan and statistics_metrics do (number_column in): 176)
MAX_PUBLIC_NAMES = 176


def test_the_public_api_is_small():
    assert len(public.__all__) <= MAX_PUBLIC_NAMES, (
        f"msprobe_core.plugin has {len(public.__all__)} names: at most {MAX_PUBLIC_NAMES} (what only this "
        "repository's plugins need, their own or a sibling's module gives them)")


def _is_assignment_of(line: str, name: str) -> bool:
    target = line.split("=", 1)[0] if "=" in line and not line.startswith((" ", "#")) else ""
    return name in [t.split(":")[0].strip() for t in target.split(",")]


def _documentation(name: str, value: object, home: types.ModuleType) -> str | None:
    """What documents ``name`` where it is defined: the docstring of its module, class or function; for a constant,
    the string right after its assignment, or the ``#:`` comment above it (or above the run of assignments it is in)."""
    if isinstance(value, types.ModuleType):
        return ast.get_docstring(ast.parse(Path(value.__file__).read_text(encoding="utf-8")))
    if inspect.isclass(value) or inspect.isfunction(value):
        value = inspect.unwrap(value)  # a @contextmanager's function
        tree = ast.parse(Path(inspect.getsourcefile(value)).read_text(encoding="utf-8"))
        defs = [n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == value.__name__]
        if defs:
            return ast.get_docstring(defs[0])
        # a class made at run time (CompareOptions): its own docstring, not the signature dataclasses write
        doc = vars(value).get("__doc__") or ""
        return None if doc.startswith(f"{value.__name__}(") else inspect.cleandoc(doc)
    source = Path(home.__file__).read_text(encoding="utf-8")
    body = ast.parse(source).body
    for node, after in zip(body, body[1:]):  # an attribute docstring: the string right after the assignment
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and isinstance(after, ast.Expr) \
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            return inspect.cleandoc(after.value.value)
    lines = source.splitlines()
    for i, line in enumerate(lines):
        if _is_assignment_of(line, name):
            while i > 0 and lines[i - 1].split("=", 1)[0].strip().replace(",", "").replace(" ", "").isidentifier():
                i -= 1  # the run of assignments this one is in (MODE_TENSOR, MODE_STATISTICS… share one comment)
            return lines[i - 1][2:].strip() if i > 0 and lines[i - 1].startswith("#:") else None
    return None


@pytest.mark.parametrize("module", [public], ids=["plugin"])
def test_every_name_is_documented_where_it_is_defined(module):
    undocumented = []
    for name in module.__all__:
        value = getattr(module, name)
        home = value if isinstance(value, types.ModuleType) else importlib.import_module(module._HOME_OF[name],
                                                                                         "msprobe_core")
        doc = _documentation(name, value, home)
        if not doc or len(doc.split()) < 3:
            undocumented.append(f"{name} ({home.__name__})")
    assert not undocumented, "give these a docstring (a '#:' comment for a constant): " + ", ".join(undocumented)


def test_the_documentation_check_sees_a_missing_docstring_and_comment(tmp_path, monkeypatch):
    (tmp_path / "undocumented_mod.py").write_text('"""A module."""\nX = 1\n#: the answer\nY = 2\nZ = 3\n'
                                                  'def f():\n    pass\nclass K:\n    """A class that says so."""\n'
                                                  'W = 4\n"""What W is."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("undocumented_mod")
    assert _documentation("X", mod.X, mod) is None and _documentation("f", mod.f, mod) is None
    assert _documentation("Y", mod.Y, mod) == _documentation("Z", mod.Z, mod) == "the answer"
    assert _documentation("K", mod.K, mod) == "A class that says so." and _documentation("W", mod.W, mod) == "What W is."


@pytest.mark.parametrize("module", [public], ids=["plugin"])
def test_the_type_checking_imports_are_the_public_names(module):
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    seen = [a.asname or a.name for node in block.body if isinstance(node, ast.ImportFrom) for a in node.names]
    assert sorted(seen) == module.__all__
    homes = {f".{node.module}" for node in block.body if isinstance(node, ast.ImportFrom) and node.module}
    assert homes - {"."} >= set(module._HOMES)


def test_the_docs_name_every_public_name():
    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("## What a plugin imports", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`(\w+)`", section))
    assert not set(public.__all__) - documented, "document these in docs/plugins.md, What a plugin imports"


REGISTRATION = ("hookimpl", "FrameworkSpec", "DtypeInfo", "MapperSpec", "MetricSpec", "TensorMetricSpec",
                "WriterSpec", "VerdictSpec", "OptionSpec", "Register", "UsageError", "InputError", "CompareOptions",
                "DumpTable", "MatchResult", "MODE_TENSOR", "result_columns", "CommOpSpec", "ExecutorSpec")


def test_registering_a_plugin_loads_none_of_the_stages():
    code = (f"import json, sys\nimport msprobe_core.plugin as P\nfor n in {REGISTRATION!r}: getattr(P, n)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'pandas', 'click', 'pydantic', 'yaml', 'openpyxl') or m.startswith('msprobe_core.'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                       timeout=600).stdout)
    heavy = [m for m in loaded if not m.startswith("msprobe_core.")]
    stages = [m for m in loaded if m.startswith("msprobe_core.") and m.split(".")[1] in ("load", "match", "metrics", "verdicts", "write", "pipeline",
                                                       "run", "report", "text")]
    assert not heavy and not stages, (heavy, stages)
