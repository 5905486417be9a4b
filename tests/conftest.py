"""The helpers of the shared fixtures module, under the name the tests import them by (``from .conftest import ...``).

The fixtures and hooks themselves are in ``tests/fixtures.py``, registered once for every test directory (the
core's ``tests/`` and each plugin's ``plugins/<name>/tests/``) by the root ``conftest.py``; this module holds no
fixture and no hook, so nothing is registered twice.
"""

from __future__ import annotations

from .fixtures import (  # noqa: F401
    IN_REPO_CORPUS,
    REPO,
    agree,
    corpora_dir,
    corpus_mark,
    has_corpus,
    no_corpora_reason,
    no_oracle_diff_reason,
    oracle_diff_path,
    shared_dir,
)
