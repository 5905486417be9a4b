"""The advisor: the first API that fails, and why (spec compare-legacy.md §8).

Writes ``advisor{suffix}_{timestamp}.txt`` (three lines) next to the result and logs
the same summary, exactly as msprobe 8.3.3 does.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msprobe_core.plugin import MODE_MD5, MODE_STATISTICS, MODE_TENSOR, OutputError, write_text_atomic
from msprobe_core.plugin import result_columns as C

from .table import ACCURACY, RESULT

log = logging.getLogger("msprobe")

NO_ERROR = "NA"
NO_ERR_SUGGEST = "All data in comparison result meets the accuracy requirements."
FORWARD_INPUT_SUGGEST = (
    "1. Analyze the model to view the input source.\n"
    "2. Check whether an inplace API causes the output result to overwrite the input result. "
    "That is, the fault is actually caused by a computation error.\n"
    "3. The fault may be caused by memory corruption and further analysis is required."
)
FORWARD_OUTPUT_SUGGEST = "This is a forward API computation error. Check the computation implementation."
BACKWARD_INPUT_SUGGEST = "Check whether the forward computation result is affected."
BACKWARD_OUTPUT_SUGGEST = "This is a backward API computation error. Check the computation implementation."
BATCH_NORM_SUGGEST = (
    "Torch API batch_norm input not fixed, the following suggestions may fix it:\n"
    "1. If use torch.nn.functional.batch_norm, you can set parameter training=False.\n"
    "2. If use torch.nn.BatchNormXXX, you can set parameter affine=False.\n"
    "3. Use seed_all(mode=True) to enable deterministic computing."
)
DETERMINISTIC_SUGGEST = (
    "This torch api may be uncertainty in the calculation, can seed_all(mode=True) to enable deterministic computing."
)
NEED_DETERMINISTIC_API = ("conv2d", "conv3d", "matmul", "nll_loss", "layer_norm", "lstm")
_MODE_TEXT = {MODE_TENSOR: "all", MODE_STATISTICS: "summary", MODE_MD5: "md5"}


@dataclass(frozen=True)
class Advice:
    """The advisor's verdict: the data-row index (0-based), the suspect row name and the advice text."""

    line: str
    node: str
    message: str

    def lines(self) -> list[str]:
        """The three summary lines."""
        return [f"Line: {self.line}", f"Suspect Nodes: {self.node}", f"Expert Advice: {self.message}"]


def advice_for(name: str) -> str:
    """The advice text for a failing row, chosen by substrings of its name (§8 step 5)."""
    if "forward" in name:
        if "input" in name:
            message = FORWARD_INPUT_SUGGEST
        else:
            message = FORWARD_OUTPUT_SUGGEST
            if any(api in name for api in NEED_DETERMINISTIC_API):
                message = DETERMINISTIC_SUGGEST
    else:
        if "input" in name:
            message = BACKWARD_INPUT_SUGGEST
        else:
            message = BACKWARD_OUTPUT_SUGGEST
            if any(api in name for api in NEED_DETERMINISTIC_API):
                message = DETERMINISTIC_SUGGEST
    if "Functional_batch_norm" in name and "forward_input.1" in name:
        message = BATCH_NORM_SUGGEST
    return message


def analyse(mode: str, data: Mapping[str, Sequence[Any]]) -> Advice:
    """Find the first failing row of a finished classic table (columns ``data``) and log what 8.3.3 logs."""
    log.info("Start analyzing the comparison result: %s", _MODE_TEXT.get(mode, mode))
    names = data[C.NPU_NAME]
    if mode == MODE_TENSOR:
        for name, acc in zip(names, data[ACCURACY]):
            if acc == "Unmatched":
                log.warning("The tensor name matches but the shape or dtype does not match: %s", name)
        failing = "No"
        column = data[ACCURACY]
    else:
        for name, a, b in zip(names, data[C.NPU_SHAPE], data[C.BENCH_SHAPE]):
            if a == "Nan" or b == "Nan":
                log.warning("The tensor name matches but the shape or dtype does not match: %s", name)
        failing = "Different" if mode == MODE_MD5 else "Warning"
        column = data[RESULT]
    for index, value in enumerate(column):
        if value == failing:
            node = names[index]
            log.warning("Find %s accuracy not reached, the line is %s", node, index)
            return Advice(str(index), node, advice_for(node))
    log.info("All data from api input/output accuracy reached")
    return Advice(NO_ERROR, NO_ERROR, NO_ERR_SUGGEST)


def write_advice(advice: Advice, output_dir: Path, suffix: str = "", timestamp: str | None = None) -> Path:
    """Log the summary and write ``advisor{suffix}_{timestamp}.txt``; returns its path."""
    log.info("The summary of the expert advice is as follows: ")
    lines = advice.lines()
    for line in lines:
        log.info(line)
    stamp = timestamp or time.strftime("%Y%m%d%H%M%S")
    path = Path(output_dir) / f"advisor{suffix}_{stamp}.txt"
    if path.is_file():  # replaced, as its workbook is (8.3.3 overwrites both)
        path.unlink()
    write_text_atomic(path, "".join(line + "\n" for line in lines), what="advisor summary")
    try:
        os.chmod(path, 0o640)
    except OSError as exc:
        raise OutputError(f"cannot write advisor summary ({exc.strerror or exc})", path=path) from None
    log.info("The advisor summary is saved in: %s", path.resolve())
    return path
