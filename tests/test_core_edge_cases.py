"""The traps of spec compare-core.md §12, each on a small real dump written to disk."""

from __future__ import annotations

import json

from msprobe_core.cli.main import main

from .dumps import api, only_result, read_csv, tensor, write_dump


def _compare(tmp_path, npu_data, bench_data, *args, **kw):
    t = write_dump(tmp_path / "t", npu_data, **kw)
    g = write_dump(tmp_path / "g", bench_data, **{k: v for k, v in kw.items() if k != "stack"})
    out = tmp_path / "out"
    assert main(["compare", "-tp", str(t), "-gp", str(g), "-o", str(out), *args]) == 0
    return read_csv(only_result(out))


def test_bench_only_entries_are_dropped_and_order_is_target_order(tmp_path):
    npu = {"Functional.relu.0.forward": api([tensor()], [tensor()]), "Torch.add.0.forward": api([tensor()], [tensor()])}
    bench = {"Torch.add.0.forward": api([tensor()], [tensor()]), "Torch.extra.0.forward": api([tensor()], [tensor()]),
             "Functional.relu.0.forward": api([tensor()], [tensor()])}
    rows = _compare(tmp_path, npu, bench)
    assert [r["NPU Name"] for r in rows] == [
        "Functional.relu.0.forward.input.0", "Functional.relu.0.forward.output.0",
        "Torch.add.0.forward.input.0", "Torch.add.0.forward.output.0"]
    assert all("extra" not in r["Bench Name"] for r in rows)


def test_dtype_gate_unpairs_int_mismatch_but_pairs_float_family(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor("torch.int32")], [tensor("torch.float16")])}
    bench = {"Torch.a.0.forward": api([tensor("torch.int64")], [tensor("torch.float32")])}
    rows = _compare(tmp_path, npu, bench)
    assert rows[0]["Bench Name"] == "N/A" and rows[0]["Bench Dtype"] == "N/A"
    assert rows[0]["Max diff"] == "N/A" and rows[0]["Result"] == "pass"
    assert rows[1]["Bench Name"] == "Torch.a.0.forward.output.0"
    assert rows[1]["Result"] == "error"
    assert json.loads(rows[1]["Err_message"]) == ["error: The dtype of NPU and Bench are inconsistent."]


def test_shape_is_not_a_matching_condition(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor(shape=(2, 3))], [])}
    bench = {"Torch.a.0.forward": api([tensor(shape=(3, 2))], [])}
    rows = _compare(tmp_path, npu, bench)
    assert rows[0]["Bench Tensor Shape"] == "[3, 2]"
    assert json.loads(rows[0]["Err_message"]) == ["error: The shape of NPU and Bench are inconsistent."]


def test_backward_calls_are_renumbered_but_names_kept(tmp_path):
    npu = {"Functional.linear.3.backward": {"input": [tensor()], "output": [tensor()]}}
    bench = {"Functional.linear.0.backward": {"input": [tensor()], "output": [tensor()]}}
    rows = _compare(tmp_path, npu, bench)
    assert rows[0]["NPU Name"] == "Functional.linear.3.backward.input.0"
    assert rows[0]["Bench Name"] == "Functional.linear.0.backward.input.0"


def test_kwargs_are_named_input_in_statistics_mode(tmp_path):
    npu = {"Functional.conv2d.0.forward": api([tensor()], [tensor()], kwargs={"bias": tensor(shape=[3])})}
    rows = _compare(tmp_path, npu, npu)
    assert [r["NPU Name"] for r in rows] == [
        "Functional.conv2d.0.forward.input.0", "Functional.conv2d.0.forward.input.bias",
        "Functional.conv2d.0.forward.output.0"]


def test_csv_spelling_of_inf_nan_missing_and_unmatched(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor(mx=float("inf"), mn=float("nan"), mean=None)], [tensor()]),
           "Torch.b.0.forward": api([tensor()], [])}
    bench = {"Torch.a.0.forward": api([tensor(mx=5.0, mn=1.0, mean=None)], [tensor()])}
    rows = _compare(tmp_path, npu, bench)
    first = rows[0]
    assert first["NPU max"] == " inf" and first["Max diff"] == "inf" and first["MaxRelativeErr"] == "inf"
    assert first["NPU min"] == "Nan" and first["Min diff"] == "Nan"
    assert first["NPU mean"] == "None" and first["Mean diff"] == "0"
    assert json.loads(first["Err_message"]) == ["error: There is nan/inf/-inf in the maximum or minimum value of NPU."]
    unmatched = rows[2]
    assert unmatched["Bench Name"] == "N/A" and unmatched["Bench max"] == "N/A" and unmatched["Max diff"] == "N/A"
    assert unmatched["Result"] == "pass" and unmatched["Err_message"] == "[]"


def test_stats_equality_is_by_text(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor("torch.int64", mx=1, mn=0, mean=None, norm=None)], [])}
    bench = {"Torch.a.0.forward": api([tensor("torch.int64", mx=1.0, mn=0, mean=None, norm=None)], [])}
    rows = _compare(tmp_path, npu, bench)
    assert rows[0]["Max diff"] == "0.0" and rows[0]["MaxRelativeErr"] == "0.0%"
    assert rows[0]["Min diff"] == "0"


def test_relative_error_spelling(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor(mx=1.0, mn=5.0)], [])}
    bench = {"Torch.a.0.forward": api([tensor(mx=1.05, mn=0.0)], [])}
    rows = _compare(tmp_path, npu, bench)
    assert rows[0]["Max diff"] == repr(1.0 - 1.05)
    assert rows[0]["MaxRelativeErr"] == repr(abs((1.0 - 1.05) / 1.05 * 100)) + "%"
    assert rows[0]["Min diff"] == "5.0" and rows[0]["MinRelativeErr"] == "inf"


def test_md5_mode_columns_and_verdicts(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor(md5="aaaa0000")], [tensor(md5="bbbb0000")]), "Torch.b.0.forward": api([tensor(md5="1")])}
    bench = {"Torch.a.0.forward": api([tensor(md5="aaaa0000")], [tensor(md5="cccc0000")])}
    rows = _compare(tmp_path, npu, bench)
    assert list(rows[0])[8:13] == ["NPU MD5", "BENCH MD5", "Requires_grad Consistent", "Result", "Err_message"]
    assert [r["Result"] for r in rows] == ["pass", "error", "warning"]
    assert json.loads(rows[1]["Err_message"]) == ["error: The CRC-32 value of NPU differs from that of the bench."]


def test_stack_goes_on_first_row_of_each_api_only(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor()], [tensor()])}
    stack = {"0": [["Torch.a.0.forward"], ["File x.py, line 1, in f, \n y = a(x)"]]}
    rows = _compare(tmp_path, npu, npu, stack=stack)
    assert rows[0]["NPU_Stack_Info"] == str(["File x.py, line 1, in f, \n y = a(x)"])
    assert rows[1]["NPU_Stack_Info"] == "N/A"


def test_no_stack_json_no_stack_column(tmp_path):
    rows = _compare(tmp_path, {"Torch.a.0.forward": api([tensor()])}, {"Torch.a.0.forward": api([tensor()])})
    assert "NPU_Stack_Info" not in rows[0]


def test_null_arguments_give_rows_and_empty_containers_do_not(tmp_path):
    npu = {"Torch.a.0.forward": api([None, [], {}, {"type": "int", "value": 3}], [tensor()])}
    rows = _compare(tmp_path, npu, npu)
    assert [r["NPU Name"] for r in rows] == ["Torch.a.0.forward.input.0", "Torch.a.0.forward.input.3", "Torch.a.0.forward.output.0"]
    assert rows[0]["NPU Dtype"] == "N/A" and rows[0]["NPU Tensor Shape"] == "N/A" and rows[0]["NPU max"] == "None"
    assert rows[1]["NPU Dtype"] == "<class 'int'>" and rows[1]["NPU Tensor Shape"] == "[]" and rows[1]["NPU max"] == "3"


def test_scalar_parameter_mismatch_is_an_error(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor(), {"type": "float", "value": 2.0}], [tensor()])}
    bench = {"Torch.a.0.forward": api([tensor(), {"type": "float", "value": 3.0}], [tensor()])}
    rows = _compare(tmp_path, npu, bench)
    assert json.loads(rows[1]["Err_message"]) == ["error: The scalar parameters of NPU and Bench are inconsistent."]


def test_keys_without_forward_or_backward_are_skipped(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor()]), "weird_key": api([tensor()])}
    rows = _compare(tmp_path, npu, npu)
    assert [r["NPU Name"] for r in rows] == ["Torch.a.0.forward.input.0"]


def test_parameters_grad_rows(tmp_path):
    npu = {"Module.fc.Linear.parameters_grad": {"weight": [tensor()], "bias": [tensor()]}}
    rows = _compare(tmp_path, npu, npu)
    assert [r["NPU Name"] for r in rows] == ["Module.fc.Linear.parameters_grad.weight", "Module.fc.Linear.parameters_grad.bias"]


def test_output_norm_ten_times_input_is_a_warning(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor(norm=2.0)], [tensor(norm=2.5)])}
    bench = {"Torch.a.0.forward": api([tensor(norm=2.0)], [tensor(norm=2.0)])}
    rows = _compare(tmp_path, npu, bench)
    assert rows[1]["Result"] == "warning"
    assert json.loads(rows[1]["Err_message"]) == ["warning: The norm relative error of output is 10 times that of input."]


def test_formula_like_text_is_neutralised_not_fatal(tmp_path):
    npu = {"Torch.a.0.forward": api([{"type": "str", "value": "=HYPERLINK(1)"}, {"type": "str", "value": "-x"}])}
    rows = _compare(tmp_path, npu, npu)
    assert rows[0]["NPU max"] == "'=HYPERLINK(1)"
    assert rows[1]["NPU max"] == "'-x"


def test_negative_numbers_are_not_treated_as_formulas(tmp_path):
    npu = {"Torch.a.0.forward": api([tensor(mx=-1.5, mn=-2.0)])}
    rows = _compare(tmp_path, npu, npu)
    assert rows[0]["NPU max"] == "-1.5"
