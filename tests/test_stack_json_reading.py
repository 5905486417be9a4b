"""``stack.json`` read by either strategy (``load_stack``: whole tables; ``read_stack_records``: streamed) in
bounded memory and from one version of the file.

* A file padded with blanks (between its members, around them, at its ends) is read in a window of a few
  blocks: the blanks are dropped as they are read, never gathered into one text (a gigabyte of them cost
  2.4 GB in both strategies). Measured as the peak memory of a child process, against padding many times
  the bound.
* A file rewritten in place or replaced while it is read is refused with one line naming it, as a ``dump.json``
  that changes between the passes of a streamed compare is (``fast_scan.chunks.changed``): what was parsed mixes two
  versions. The change is made from the reader's own callback, at a known point of the read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from msprobe_core.errors import InputError
from msprobe_core.files import jsonfile
from msprobe_core.files.jsonfile import parse_streamed
from msprobe_core.load.dumpjson import load_stack

MIB = 1 << 20
#: blanks in the padded file, many times the bound below
PADDING = 192 * MIB
#: the most a read of the padded file may add to the reader's peak memory (the window is a few 8 MiB blocks)
BOUND = 64 * MIB

STACK = {
    "0": [["Mint.add.0.forward", "Mint.add.0.backward"], ["File a.py, line 1, in f, \n x = y + z"]],
    "1": [["Mint.mul.0.forward"], ["File b.py, line 2, in g, \n w = x * 2", "File a.py, line 1, in f, \n g()"]],
}


def _padded(path: Path, blank: bytes = b" \n\t\r") -> None:
    """``STACK`` with ``PADDING`` bytes of blanks spread over every place a blank may stand between tokens of the
    top level: before the document, after ``{``, after a colon, around a comma, before ``}``, after the document."""
    places = 6
    each = PADDING // places
    pad = (blank * (each // len(blank) + 1))[:each]
    with open(path, "wb") as fh:
        fh.write(pad + b"{" + pad)
        fh.write(b'"0":' + pad + json.dumps(STACK["0"]).encode() + pad + b"," + pad)
        fh.write(b'"1": ' + json.dumps(STACK["1"]).encode() + b"}" + pad)


_MEASURE = """
import json, resource, sys
from pathlib import Path
from msprobe_core.load.dumpjson import load_stack
from msprobe_core.default_plugins.chunked.stackrecords import read_stack_records
path = Path(sys.argv[2])
read = load_stack if sys.argv[1] == "whole" else read_stack_records
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
got = read(path)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if sys.argv[1] == "whole":
    shape = sorted(got.items())
else:
    shape = [got.lines, got.starts.tolist(), got.ids.tolist(), got.name_hash.tolist(), got.name_record.tolist()]
print(json.dumps({"grew": (after - before) * 1024, "shape": shape}))
"""


def _measure(strategy: str, path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _MEASURE, strategy, str(path)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("strategy", ["whole", "streamed"])
def test_a_stack_json_padded_with_blanks_is_read_in_bounded_memory(tmp_path, strategy):
    if strategy == "streamed":
        pytest.importorskip("msprobe_core._dumpscan", reason="the streamed reader hashes names with the C scanner")
    padded, plain = tmp_path / "padded" / "stack.json", tmp_path / "plain" / "stack.json"
    padded.parent.mkdir()
    plain.parent.mkdir()
    _padded(padded)
    plain.write_text(json.dumps(STACK))
    assert padded.stat().st_size >= PADDING >= 3 * BOUND
    got = _measure(strategy, padded)
    assert got["grew"] < BOUND, f"reading {padded.stat().st_size:,} bytes raised the peak by {got['grew']:,} bytes"
    assert got["shape"] == _measure(strategy, plain)["shape"]  # the blanks change nothing read


def _big_stack(path: Path, members: int, tag: str) -> bytes:
    doc = {str(k): [[f"Mint.op{k}.0.forward"], [f"File {tag}.py, line {k}, in f, \n x = {tag}({k})"]]
           for k in range(members)}
    data = json.dumps(doc, indent=1).encode()
    path.write_bytes(data)
    return data


@pytest.mark.parametrize("how", ["in place", "replaced"])
@pytest.mark.parametrize("size", ["blocks", "whole"])
def test_a_stack_json_that_changes_while_it_is_read_is_refused(tmp_path, monkeypatch, how, size):
    path = tmp_path / "stack.json"
    _big_stack(path, 400, "old")
    if size == "blocks":  # read block by block, as a file over BLOCK_BYTES is
        monkeypatch.setattr(jsonfile, "BLOCK_BYTES", 4096)
    seen: list[str] = []

    def rewrite_after_the_first(key, value) -> None:  # a dumper rewriting the file while the compare reads it
        seen.append(value[1][0])
        if len(seen) == 1:
            if how == "in place":
                with open(path, "r+b") as fh:
                    fh.write(json.dumps({str(k): [[f"Mint.op{k}.0.forward"], [f"File new.py, line {k}"]]
                                         for k in range(400)}, indent=1).encode())
                    fh.truncate()
            else:
                new = tmp_path / "stack.json.new"
                _big_stack(new, 400, "new")
                os.replace(new, path)

    with pytest.raises(InputError) as err:
        parse_streamed(path, "stack", None, lambda v: InputError("not an object", path=path),
                       rewrite_after_the_first, scanner_messages=True)
    assert "changed while it was being read" in str(err.value) and str(path) in str(err.value)


def test_load_stack_of_an_unchanged_file_is_not_refused(tmp_path, monkeypatch):
    path = tmp_path / "stack.json"
    _big_stack(path, 400, "old")
    monkeypatch.setattr(jsonfile, "BLOCK_BYTES", 4096)
    assert len(load_stack(path)) == 400


def test_a_small_stack_json_is_decoded_whole_not_member_by_member(tmp_path, monkeypatch):
    """A file of at most a block is decoded by one ``orjson.loads`` call: the member-by-member reader (a Python loop
    per member, a third of the stack's time at 15,000 members) is never built for it."""
    from msprobe_core.files import jsonstream

    path = tmp_path / "stack.json"
    data = _big_stack(path, 400, "old")
    assert len(data) <= jsonfile.BLOCK_BYTES

    def refuse(*args, **kwargs):
        raise AssertionError("the member-by-member reader read a small stack.json")

    monkeypatch.setattr(jsonfile, "ObjectStream", refuse)
    monkeypatch.setattr(jsonstream, "ObjectStream", refuse)
    got = load_stack(path)
    assert got["Mint.op7.0.forward"] == ["File old.py, line 7, in f, \n x = old(7)"] and len(got) == 400


_NESTED = '{"0": [["a"], ' + "[" * 100_000 + "]" * 100_000 + "]}"
#: texts whose outcome (the dict, or the error's class and words) the whole decode must share with the streamed reader
SMALL_STACKS: dict[str, bytes] = {
    "new layout": json.dumps(STACK).encode(),
    "old layout": b'{"Mint.add.0.forward": ["File a.py, line 1", "File b.py, line 2"], "Mint.mul.0.forward": []}',
    "old layout, a stack not a list": b'{"Mint.add.0.forward": ["l"], "Mint.mul.0.forward": "l"}',
    "new layout, a key twice": b'{"0": [["a"], ["x"]], "1": [["b"], ["y"]], "0": [["c"], ["z", "x"]]}',
    "old layout, a key twice": b'{"a": ["x"], "b": ["y"], "a": ["z"]}',
    "a key twice, first not a list": b'{"a": "x", "b": ["y"], "a": ["z"]}',
    "an empty 0 member": b'{"0": [], "a": ["l"]}',
    "no members": b"{}",
    "blanks around": b' \n\t\r{"0": [["a"], ["l"]]} \r\n\t ',
    "a list": b'[["a"], ["l"]]',
    "a string": b'"stack"',
    "a number": b"1",
    "null": b"null",
    "a list and more": b"[] x",
    "trailing data": b'{"0": [["a"], ["l"]]} {}',
    "trailing word": b"{} x",
    "deep nesting": _NESTED.encode(),
    "deep top level": b"[" * 100_000 + b"]" * 100_000,
    "a huge integer": b'{"0": [["a"], [' + b"9" * 5000 + b"]]}",
    "integers past 64 bits": b'{"0": [["a"], [18446744073709551617, -9223372036854775809]], "1": [["b"], ["l"]]}',
    "old layout, an integer past 64 bits": b'{"a": [18446744073709551617], "b": ["l"]}',
    "an API name past 64 bits": b'{"0": [[18446744073709551617], ["l"]]}',
    "a float past the largest": b'{"0": [["a"], [1e400]], "1": [["b"], ["l"]]}',
    "floats": b'{"0": [["a"], [0.1, 2.2250738585072011e-308, 5e-324, 1e-400, 1.0000000000000002220446049250313]]}',
    "NaN and infinities": b'{"0": [["a"], [NaN, Infinity, -Infinity, 1e999, -0.0]], "1": [[NaN], ["l"]]}',
    "lines of mixed types": b'{"0": [["a", 1, true, null], [1, true, 1.0, "1", null, ["t", 1], {"k": "v"}, "t"]]}',
    "odd members": b'{"0": [["a"], ["l"]], "1": "x", "2": [["b"]], "3": [1, ["l"]], "4": {"k": ["l"]}, "5": 7}',
    "not UTF-8": b'{"0": [["a"], ["\xff"]]}',
    "a byte-order mark": b'\xef\xbb\xbf{"0": [["a"], ["l"]]}',
    "two byte-order marks": b'\xef\xbb\xbf\xef\xbb\xbf{"0": [["a"], ["l"]]}',
    "empty": b"",
    "blanks only": b" \n\t ",
    "a lone surrogate": b'{"0": [["a\\ud800"], ["\\udc00l"]]}',
    "escapes": b'{"0": [["\\u00e9a"], ["l\\n\\t\\"\\\\\\/"]], "\\u0031": [["b"], ["\\ud83d\\ude00"]]}',
    "a raw control character": b'{"0": [["a"], ["x\ty"]]}',
    "single quotes": b"{'0': [['a'], ['l']]}",
    "no colon": b'{"0" [["a"], ["l"]]}',
    "no comma": b'{"0": [["a"], ["l"]] "1": [["b"], ["l"]]}',
    "a trailing comma": b'{"0": [["a"], ["l"]],}',
    "cut short": b'{"Torch.a.0.forward": [',
    "a key not a string": b'{0: [["a"], ["l"]]}',
    "a form feed": b'{"0": [["a"], ["l"]]\x0c}',
}


def _outcome(path: Path) -> tuple:
    try:
        return ("read", load_stack(path))
    except Exception as exc:  # noqa: BLE001 - the class and words of whatever it raises are compared
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("name", sorted(SMALL_STACKS))
def test_a_small_stack_json_decoded_whole_reads_as_the_streamed_reader_reads_it(tmp_path, monkeypatch, name):
    from msprobe_core.load import dumpjson

    path = tmp_path / "stack.json"
    path.write_bytes(SMALL_STACKS[name])
    whole = _outcome(path)
    monkeypatch.setattr(dumpjson, "read_small_object", lambda path, what: None)  # the streamed reader, as before
    streamed = _outcome(path)
    assert whole == streamed
    if whole[0] == "read":  # and the dict's order
        assert list(whole[1]) == list(streamed[1])


def test_nesting_near_the_recursion_limit_reads_as_the_streamed_reader_reads_it(tmp_path, monkeypatch):
    """At each depth around the interpreter's limit the whole decode reads what streaming reads, or hands the file
    to it: neither reads a file the other refuses as too deep."""
    from msprobe_core.load import dumpjson

    limit = sys.getrecursionlimit()
    outcomes = []
    for depth in range(limit - 80, limit + 5):
        path = tmp_path / f"stack{depth}.json"
        path.write_text('{"0": [["a"], ["l"]], "1": [["b"], ' + "[" * depth + "]" * depth + "]}")
        outcomes.append(_outcome(path))
    monkeypatch.setattr(dumpjson, "read_small_object", lambda path, what: None)
    for depth, whole in zip(range(limit - 80, limit + 5), outcomes):
        assert whole == _outcome(tmp_path / f"stack{depth}.json"), depth
    assert {o[0] for o in outcomes} == {"read", "InputError"}  # the range crosses the limit


@pytest.mark.parametrize("how", ["in place", "replaced"])
def test_a_small_stack_json_that_changes_while_it_is_decoded_whole_is_refused(tmp_path, monkeypatch, how):
    """The whole decode reads from the same window as streaming, and is refused the same way when the file is
    rewritten meanwhile (the change is made as the decode starts)."""
    import orjson

    path = tmp_path / "stack.json"
    _big_stack(path, 400, "old")
    real_loads = orjson.loads

    def rewrite_then_decode(text):  # a dumper rewriting the file while the compare decodes it
        if how == "in place":
            with open(path, "r+b") as fh:
                fh.write(json.dumps({"0": [["Mint.op0.0.forward"], ["File new.py, line 0"]]}).encode())
                fh.truncate()
        else:
            _big_stack(tmp_path / "stack.json.new", 400, "new")
            os.replace(tmp_path / "stack.json.new", path)
        return real_loads(text)

    monkeypatch.setattr(orjson, "loads", rewrite_then_decode)
    with pytest.raises(InputError) as err:
        load_stack(path)
    assert "changed while it was being read" in str(err.value) and str(path) in str(err.value)
