"""The run's summary and what is built on it, as default plugins on the run-finished hooks.

* ``summary`` (:mod:`.plugin`): the per-job summary partials, the summary of the run (verdict counts, worst rows,
  first divergence, per-module answers, unpaired rows, the next dump's config) and its text on the console;
  ``--min-matched``;
* ``gate`` (:mod:`.gate`): ``--fail-on``, exit status 3;
* ``json_summary`` (:mod:`.json_file`): ``--json-summary FILE``.

The other modules are the summary's machinery (read with the result views of :mod:`.views`).
"""
