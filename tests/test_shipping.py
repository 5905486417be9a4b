"""Paths made absolute before work leaves for another machine's processes (msprobe_core.run.shipping)."""

from __future__ import annotations

from pathlib import Path

from msprobe_core.host.specs import CompareJob
from msprobe_core.model import CompareOptions
from msprobe_core.run.shipping import absolute_paths


def test_every_relative_path_of_a_job_and_the_options_is_joined_to_the_working_directory(tmp_path: Path) -> None:
    job = CompareJob(Path("t/step0/rank0/dump.json"), Path("/abs/g.json"), Path("OUT"), "compare_result_rank0",
                     plugin_data={"dirs": [Path("t/net"), "t/as-text"], "n": 3})
    shipped = absolute_paths(job, tmp_path)
    assert shipped.target == tmp_path / "t/step0/rank0/dump.json"
    assert shipped.golden == Path("/abs/g.json") and shipped.output_dir == tmp_path / "OUT"
    assert shipped.plugin_data == {"dirs": [tmp_path / "t/net", "t/as-text"], "n": 3}  # text is not taken for a path
    assert job.target == Path("t/step0/rank0/dump.json")  # the client's own job is left as it was
    options = CompareOptions(output_dir=Path("./output"), plugins={"mapping": Path("map.yaml")})
    shipped_options = absolute_paths(options, tmp_path)
    assert shipped_options.output_dir == tmp_path / "output"
    assert shipped_options.plugins == {"mapping": tmp_path / "map.yaml"}


def test_what_holds_no_relative_path_is_the_same_object(tmp_path: Path) -> None:
    job = CompareJob(tmp_path / "t.json", tmp_path / "g.json", tmp_path, "compare_result", plugin_data={"k": [1, "x"]})
    assert absolute_paths(job) is job
    assert absolute_paths(Path("../up")) == Path.cwd() / "../up"  # joined, not resolved
