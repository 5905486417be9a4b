"""The file ``--auto-map`` writes reads back through ``-dm`` exactly, whatever the names in the dumps hold.

A YAML reader refuses DEL, C1 and C0 controls, U+FFFE/U+FFFF and lone surrogates in a file, folds a line
break (NEL, LS, PS, CR, LF) inside a quoted name into a space, and takes no implicit key of 1,024 characters
or more: each used to make ``-dm`` refuse the written file, or (NEL) read another name back and leave rows
unmatched with exit 0. Here the names come from hostile alphabets (a property test and a seeded bulk run
through the real ``-dm`` reader) and from a real renamed dump pair whose module names hold them.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msprobe_core.default_plugins.automap.automap import UNPAIRED, Proposal, yaml_text
from msprobe_core.files.outputs import TEXT_ERRORS
from msprobe_core.match.data_mapping import load_data_mapping

from .automap_truth import DUMPS

#: characters a YAML file cannot carry as they are, or reads back as others, and YAML's own syntax
HOSTILE = ("\x00\x01\x07\x08\t\n\x0b\x0c\r\x1b\x1f\x7f\x80\x84\x85\x86\x9f\xa0\u2028\u2029\ufeff\ufffe\uffff"
           "\ud800\udfff\U0010ffff\U0001f600\u4e2d\u00e9"
           "\"'\\:#-?&*!|>%@`{}[],. ")
PLAIN = "abcXYZ019._"


def _names(min_size: int = 1) -> st.SearchStrategy[str]:
    alphabet = st.sampled_from(HOSTILE + PLAIN)
    short = st.text(alphabet, min_size=min_size, max_size=40)
    long = st.text(alphabet, min_size=1000, max_size=1400)
    return st.one_of(short, short, short, short, short, long)


def _write(proposal: Proposal, path: Path) -> Path:
    # as the attachment is written (msprobe_core.write.stage.write_attachments)
    path.write_text(yaml_text(proposal), encoding="utf-8", errors=TEXT_ERRORS)
    return path


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.dictionaries(_names(), _names(), min_size=1, max_size=6), other=_names())
def test_every_name_reads_back_exactly_through_dm(pairs, other, tmp_path):
    first = next(iter(pairs))
    proposal = Proposal(dict(pairs), comments={first: f"0.95 aligned: golden {other}"},
                        header=[f"target: {other}", f"unpaired: target {first}: {other}"])
    text = yaml_text(proposal)
    assert len([line for line in text.splitlines() if line.startswith("#")]) == 3  # a name never ends a comment
    assert load_data_mapping(_write(proposal, tmp_path / "auto_mapping.yaml")) == pairs


def test_three_thousand_seeded_hostile_names_read_back(tmp_path):
    rng = random.Random(20261206)
    alphabet = HOSTILE + PLAIN
    names = set()
    while len(names) < 3_000:
        size = 1100 if len(names) % 60 == 0 else rng.choice((1, 3, 8, 30, 120))
        names.add("".join(rng.choice(alphabet) for _ in range(size)))
    ordered = sorted(names)
    mapping = dict(zip(ordered, reversed(ordered)))
    proposal = Proposal(mapping, comments={n: f"1.00 anchor: golden {n}" for n in ordered[::7]},
                        header=[f"unpaired: target {n}: extra" for n in ordered[:50]])
    assert load_data_mapping(_write(proposal, tmp_path / "auto_mapping.yaml")) == mapping


def test_a_hand_written_data_mapping_reads_as_before(tmp_path):
    path = tmp_path / "dm.yaml"
    path.write_text("# a comment\nFunctional.linear.0.forward.input.0: 'Functional.linear.1.forward.input.0'\n"
                    '"Tensor.add.0.forward.output.0": Tensor.add.2.forward.output.0\n5: 6\n', encoding="utf-8")
    assert load_data_mapping(path) == {"Functional.linear.0.forward.input.0": "Functional.linear.1.forward.input.0",
                                       "Tensor.add.0.forward.output.0": "Tensor.add.2.forward.output.0", "5": "6"}


# --------------------------------------------------------------------------- a real dump pair with such names
#: module names of the twin dumps given hostile spellings (golden side: the NEL case of the issue)
GOLDEN_RENAMES = {"attn": "at\x85tn", "mlp": "ml\u2028p", "norm": "no\x7frm" + "\x9f" * 1100}
TARGET_RENAMES = {"self_attention": "self\u2029att\x01ention", "mlp": "m\ufffel\uffffp",
                  "final_layernorm": "final\x85layer\rnorm" + "\u00e9" * 1100}


def _renamed(value: object, renames: dict[str, str]) -> object:
    """``value`` with every dotted name part in ``renames`` spelled the hostile way (keys and strings alike)."""
    if isinstance(value, str):
        return ".".join(renames.get(part, part) for part in value.split("."))
    if isinstance(value, dict):
        return {_renamed(k, renames): _renamed(v, renames) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, renames) for v in value]
    return value


def _hostile_copy(name: str, renames: dict[str, str], where: Path) -> Path:
    where.mkdir()
    for part in ("dump.json", "construct.json"):
        doc = json.loads((DUMPS / name / part).read_text(encoding="utf-8"))
        if part == "dump.json":
            doc = {**doc, "data": _renamed(doc["data"], renames)}
        else:
            doc = _renamed(doc, renames)
        (where / part).write_text(json.dumps(doc), encoding="utf-8")  # JSON escapes what it must
    return where / "dump.json"


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "msprobe_core", "compare", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("golden_renames, target_renames", [
    ({"attn": "at\x85tn"}, {}),  # the silent case: -dm read NEL back as a space, rc 0, rows left unmatched
    (GOLDEN_RENAMES, TARGET_RENAMES),
], ids=["nel-in-golden", "hostile-both"])
def test_a_dump_pair_with_hostile_module_names_gives_the_same_result_with_the_written_file(
        golden_renames, target_renames, tmp_path):
    target = _hostile_copy("renamed_L0", target_renames, tmp_path / "t")
    golden = _hostile_copy("golden_L0", golden_renames, tmp_path / "g")
    auto = _cli("-tp", target, "-gp", golden, "-o", tmp_path / "auto", "--auto-map", "-q")
    assert auto.returncode == 0, auto.stderr
    (written,) = (tmp_path / "auto").glob("auto_mapping_*.yaml")
    mapping = load_data_mapping(written)
    golden_names = {g for g in mapping.values() if g != UNPAIRED}
    assert any("\x85" in g for g in golden_names)
    if target_renames:
        assert any("\u2028" in g for g in golden_names)
        assert any("\u2029" in t for t in mapping) and any(len(t) > 1100 for t in mapping)
    again = _cli("-tp", target, "-gp", golden, "-o", tmp_path / "dm", "-dm", written, "-q")
    assert again.returncode == 0, again.stderr
    (first,) = (tmp_path / "auto").glob("compare_result_*.csv")
    (second,) = (tmp_path / "dm").glob("compare_result_*.csv")
    assert first.read_bytes() == second.read_bytes()
