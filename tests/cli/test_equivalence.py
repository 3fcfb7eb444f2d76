"""``clearsight equivalence --corruptions`` (issue 45): every ImageNet-C corruption, named or by
group as a sweep's ``imagenet_c_corruptions`` names them (the same parser), placed per severity
with the detail it added and the report's 'no: adds detail' flag; a bad name is one error line,
exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clearsight import sweep
from clearsight.cli import app
from clearsight.physics import ATTENUATION_MAX_ADDED, CORRUPTION_GROUPS, CORRUPTIONS
from clearsight.scenes.bundled import load_bundled_scene
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.images.corruptions import summarise
from clearsight.sweep.images.equivalence import equivalence_table

runner = CliRunner()
NAMES = sorted([*CORRUPTIONS, *CORRUPTION_GROUPS])


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The corruptions each ``equivalence`` run asks the table for (no image is corrupted)."""
    asked: list[tuple[str, ...]] = []

    def table(**kwargs: Any) -> pd.DataFrame:
        asked.append(tuple(kwargs["corruptions"]))
        return pd.DataFrame({"scene": ["s"], "severity": [1], "v_eq_m": [10.0]})

    monkeypatch.setattr(sweep, "equivalence_table", table)
    return asked


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=5))
def test_the_flag_reads_names_and_groups_as_a_sweep_config_does(
    names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _asked(monkeypatch)
    result = runner.invoke(app, ["equivalence", "--corruptions", ",".join(names)])
    assert result.exit_code == 0, result.output
    expected = SweepConfig(imagenet_c_corruptions=names).imagenet_c_corruptions
    assert asked == [expected]
    assert len(set(expected)) == len(expected)  # each corruption once
    for name in names:  # every name asked for, and every member of each group
        assert set(CORRUPTION_GROUPS.get(name, (name,))) <= set(expected)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20))
def test_an_unknown_name_is_one_error_line_and_nothing_written(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if name in NAMES:
        return
    asked = _asked(monkeypatch)
    out = tmp_path / f"veq-{name}.csv"
    result = runner.invoke(app, ["equivalence", "--corruptions", f"fog,{name}", "--out", str(out)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert repr(name) in errors[0]
    assert asked == []
    assert not out.exists()


def test_a_corruption_that_adds_detail_is_flagged_and_one_that_attenuates_is_placed() -> None:
    """On one bundled scene: gaussian noise adds detail at every severity (not placed), the
    contrast corruption only scales it (placed, V_eq falling); fog's rows are what the fog-only
    table gave (the same seeds)."""
    scene = load_bundled_scene("skimage-chelsea")
    names = ("fog", "gaussian_noise", "contrast")
    table = equivalence_table([scene], seed=0, progress=False, corruptions=names)
    assert list(dict.fromkeys(table["corruption"])) == list(names)
    noise = table[table["corruption"] == "gaussian_noise"]
    assert (noise["added"] > ATTENUATION_MAX_ADDED).all()
    contrast = table[table["corruption"] == "contrast"].sort_values("severity")
    assert (contrast["added"] <= ATTENUATION_MAX_ADDED).all()
    assert contrast["v_eq_m"].is_monotonic_decreasing
    fog_only = equivalence_table([scene], seed=0, progress=False)
    fog = table[table["corruption"] == "fog"].reset_index(drop=True)
    pd.testing.assert_frame_equal(fog, fog_only)
    text = summarise(table).splitlines()
    noise_lines = [line for line in text if line.startswith("gaussian_noise ")]
    contrast_lines = [line for line in text if line.startswith("contrast ")]
    assert len(noise_lines) == len(contrast_lines) == 5
    assert all(line.endswith("no: adds detail") for line in noise_lines)
    assert all(line.endswith("yes") for line in contrast_lines)
    assert any(line.startswith("contrast: V_eq decreases strictly") for line in text)
