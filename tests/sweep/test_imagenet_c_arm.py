"""The sweep's ImageNet-C arm beyond fog: ``imagenet_c_corruptions`` (fog by default, groups
expanded), fog's items and keys as before, every other corruption's items drawn per scene and
severity from the item, re-rendered exactly from what the store keeps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.physics import CORRUPTIONS, corrupt, draw_box
from clearsight.scenes.bundled import load_bundled_scene
from clearsight.store import RunStore
from clearsight.sweep.conditions import imagenet_c_seed
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.results import load_run_data
from clearsight.sweep.unit import item_image

BASE = {
    "scene_ids": ("skimage-chelsea",),
    "arms": ("fog",),
    "levels_m": (62.5,),
    "controls": ("clean", "imagenet_c"),
    "imagenet_c_severities": (1, 4),
    "tasks": ("identify",),
    "wordings": ("mcq.reason",),
}


def test_the_default_is_fog_and_fogs_items_keep_their_keys() -> None:
    default = plan_sweep(SweepConfig(**BASE))
    both = plan_sweep(SweepConfig(**BASE, imagenet_c_corruptions=("fog", "snow")))
    assert SweepConfig(**BASE).imagenet_c_corruptions == ("fog",)
    assert "imagenet_c_corruptions" not in SweepConfig(**BASE).model_dump()  # as before
    assert all("corruption" not in i.to_json() for i in default.items)
    fog_keys = {i.key for i in default.items}
    snow = [i for i in both.questions if i.corruption == "snow"]
    assert fog_keys < {i.key for i in both.items}  # fog's items unchanged, snow's added
    assert sorted(i.severity for i in snow) == [1, 4]
    veq = [i for u in both.veq_units for i in u.items]
    assert [(i.corruption, i.severity) for i in veq] == [
        (None, 1),
        (None, 4),
        ("snow", 1),
        ("snow", 4),
    ]


def test_groups_expand_and_a_bad_name_is_refused() -> None:
    config = SweepConfig(**BASE, imagenet_c_corruptions=("validation", "fog"))
    assert config.imagenet_c_corruptions == (
        "speckle_noise",
        "gaussian_blur",
        "spatter",
        "saturate",
        "fog",
    )
    assert len(SweepConfig(**BASE, imagenet_c_corruptions=("all",)).imagenet_c_corruptions) == 19
    with pytest.raises(ValidationError, match="unknown ImageNet-C corruption 'fogg'"):
        SweepConfig(**BASE, imagenet_c_corruptions=("fogg",))
    with pytest.raises(ValidationError, match="at least one"):
        SweepConfig(**BASE, imagenet_c_corruptions=())


def test_a_bad_corruption_on_the_command_line_is_one_error_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["sweep", "run", "--out", str(out), "--imagenet-c-corruptions", "fog,snoww"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error:")
    assert "snoww" in lines[0]
    assert not out.exists()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(list(CORRUPTIONS)),
    severity=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
    plasma=st.sampled_from(["independent", "common"]),
)
def test_a_stored_item_re_renders_its_corrupted_image(
    name: str, severity: int, seed: int, plasma: str
) -> None:
    config = SweepConfig(
        **(BASE | {"imagenet_c_severities": (severity,), "controls": ("imagenet_c",)}),
        imagenet_c_corruptions=(name,),
        imagenet_c_plasma=plasma,  # type: ignore[arg-type]
        seed=seed,
    )
    (item,) = [i for i in plan_sweep(config).questions if i.condition == "imagenet_c"]
    stored = item.to_json()
    assert stored.get("corruption") == (None if name == "fog" else name)
    assert stored["severity"] == severity
    assert stored["seed"] == seed
    scene = load_bundled_scene("skimage-chelsea")
    own = severity if plasma == "independent" else None
    rng = np.random.RandomState(imagenet_c_seed(scene.id, seed, own, name))
    expected = draw_box(corrupt(scene.image, name, severity, rng), item.box, 8)
    np.testing.assert_array_equal(item_image(item, config.coco_depth_model), expected)


def test_a_run_stores_every_corruption_and_reads_fog_on_the_metre_axis(tmp_path: Path) -> None:
    config = SweepConfig(**BASE, imagenet_c_corruptions=("contrast", "fog"))
    run_sweep(config, tmp_path / "run", progress=False)
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        frame = store.to_frame(status="ok")
    named = frame["corruption"].astype(object).where(frame["corruption"].notna(), "fog")
    nominal = named[frame["condition"] == "imagenet_c"]
    assert sorted(nominal) == ["contrast", "contrast", "fog", "fog"]
    veq = frame[frame["protocol"] == "sweep.veq"]
    by = dict(zip(zip(named[veq.index], veq["severity"], strict=True), veq["v_eq_m"], strict=True))
    assert len(by) == 4
    # the contrast V_eq is its own: less contrast left is a denser fog
    assert by[("contrast", 4)] < by[("contrast", 1)]
    data = load_run_data(tmp_path / "run")
    assert sorted(data.records.loc[data.records["condition"] == "imagenet_c", "severity"]) == [1, 4]
    assert sorted(data.veq["severity"]) == [1, 4]
