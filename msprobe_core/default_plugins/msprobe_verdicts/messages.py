"""The messages the verdict rules (:mod:`.rules`) write into a row's ``Err_message``, each beginning with its level.

Most are msprobe's own words, kept so that a result reads as msprobe's; the rest are marked as ours. Whoever reads
results back (the summary's reasons, its first divergence) recognises a row's message by these, imported from
here (``msprobe_core.default_plugins.msprobe_verdicts.messages``).
"""

from __future__ import annotations

MSG_INF_NAN = "error: There is nan/inf/-inf in the maximum or minimum value of NPU."
MSG_ONE_THOUSANDTH = "error: The input/parameters of One Thousandth Err Ratio > 0.9 while the output < 0.6."
MSG_NORM_REL = "error: The NormRelativeErr of output is greater than 0.5."
MSG_REQUIRES_GRAD = "error: The Required_Grad of NPU and Bench are inconsistent"
MSG_PARAMETERS = "error: The scalar parameters of NPU and Bench are inconsistent."
MSG_DTYPE = "error: The dtype of NPU and Bench are inconsistent."
MSG_SHAPE = "error: The shape of NPU and Bench are inconsistent."
#: ours, not msprobe's: a backward tensor two frameworks record with other shapes is not judged (docs/differences.md)
MSG_SHAPE_RECORDED_APART = ("warning: The shape of NPU and Bench are inconsistent: the two frameworks record this "
                            "backward tensor differently, so its values were not judged.")
#: ours, not msprobe's: a forward tensor of another shape that holds the same elements, the leading dimensions folded
#: otherwise (``[16, 64]`` against ``[2, 8, 64]``), and the same values, in a cross-framework pair (docs/differences.md)
MSG_SHAPE_FOLDED = ("warning: The shape of NPU and Bench are inconsistent: the same elements with the leading "
                    "dimensions folded otherwise, and values that agree.")
MSG_COSINE_WARN = "warning: The input/parameters of Cosine > 0.9, and input/parameters - output > 0.1"
MSG_REL_WARN = "warning: The norm relative error of output is 10 times that of input."
MSG_MD5_WARN = "warning: The parameter of NPU does not match the bench."
MSG_MD5_ERR = "error: The CRC-32 value of NPU differs from that of the bench."
#: a tensor row whose file could not be read (not msprobe's: it says ``pass``); ``{}``: side, file and reason
UNREAD_PREFIX = "warning: Dump file not found or read failed, the row is not compared: "
MSG_UNREAD = UNREAD_PREFIX + "{}"
