"""The test suite's shared fixtures and hooks (``tests/fixtures.py``), for every test directory it collects.

The core's tests are in ``tests/``, each plugin's own beside it in ``plugins/<name>/tests/`` (pyproject.toml
``testpaths``); this root conftest makes the corpora, the oracle diff, the plugin session and the skip summary
reach all of them alike. Those directories are not packages: a plugin test imports the shared helpers as
``tests.<module>``.
"""

pytest_plugins = ["tests.fixtures"]
