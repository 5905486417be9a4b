"""msprobe-dask: run msprobe-core compares on a Dask cluster (``--executor dask [--scheduler ADDRESS]``).

Importing this package (what plugin loading does) does not import Dask; the
cluster is reached only when a compare with ``--executor dask`` needs it.
"""

from __future__ import annotations

__version__ = "0.1.0"
