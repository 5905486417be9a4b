"""MindSpore dumps for msprobe-core.

Registers (through the ``msprobe_core.plugins`` entry point ``mindspore``):

* the MindSpore framework (``mindspore``/``mindtorch`` dumps, ``.npy`` tensors read
  without mindspore and without pickles, dtype families for the dtype gate);
* the mappers of ``-am`` (API mapping), ``-cm`` (cell mapping) and ``-lm`` (layer
  mapping), with msprobe 26.2.0's precedence ``-am > -cm > -lm > -dm``.

The name-mapping rules themselves are pure functions in :mod:`msprobe_mindspore.mapping`.
"""

__version__ = "0.1.0"
