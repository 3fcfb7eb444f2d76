"""``clearsight demo`` in two stages: the first stage's small design asks the very questions of
the full demo (same keys, so the full demo resumes on its records), ``--quick`` stops after
its report, and a one-scene demo skips the control that needs two scenes."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from clearsight.cli import app, demo
from clearsight.store import RunStore, keys_of
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.validate import InputError

runner = CliRunner()

#: Scenes whose photos ship in wheels, with six categories (so the prior of the first three
#: differs from the prior of all five).
SCENES = (
    "skimage-chelsea",
    "skimage-coffee",
    "skimage-astronaut",
    "skimage-stereo-motorcycle",
    "mpl-grace-hopper",
)


def _full(**changes: object) -> SweepConfig:
    """A small stand-in for the demo's configuration."""
    fields: dict[str, object] = {
        "scene_ids": SCENES,
        "levels_m": (62.5, 7.8125, 1.953125),
        "controls": ("clean", "blank", "shuffled"),
        "wordings": ("mcq.reason", "verbal.plain"),
        "tasks": ("identify",),
    }
    return SweepConfig(**(fields | changes))  # type: ignore[arg-type]


def test_the_first_stage_asks_a_part_of_the_full_demo_under_the_same_keys() -> None:
    full = _full(
        models=("observer", "perceiver:detector", "perceiver:llm"),
        model_wordings={"perceiver:detector": ("mcq.reason",), "perceiver:llm": ("mcq.reason",)},
        model_scenes={"perceiver:llm": 2},
    )
    quick = demo.quick_config(full)
    assert quick.models == ("observer", "perceiver:detector")  # perceiver:llm waits
    assert quick.model_scenes == {}  # its scene limit waits with it
    assert quick.scene_ids == SCENES[:3]  # none of QUICK_SCENES here: the first three
    assert quick.levels_m == (62.5, 7.8125)  # the full demo's levels among QUICK_LEVELS_M
    assert quick.controls == ("clean",)
    assert quick.prior_scene_ids == SCENES
    quick_keys, full_keys = (
        set(keys_of(plan_sweep(quick).items)),
        set(keys_of(plan_sweep(full).items)),
    )
    assert quick_keys < full_keys
    # without the full demo's prior the same small design asks other questions
    own_prior = quick.model_copy(update={"prior_scene_ids": None})
    assert not set(keys_of(plan_sweep(own_prior).questions)) <= full_keys


def test_the_first_stage_prefers_its_scenes_and_asks_the_blind_control_letters_only() -> None:
    scenes = (*SCENES, *demo.QUICK_SCENES)
    full = _full(scene_ids=scenes, models=("observer", demo.BLIND_CONTROL))
    quick = demo.quick_config(full)
    assert quick.scene_ids == demo.QUICK_SCENES
    assert quick.wordings_of(demo.BLIND_CONTROL) == ("mcq.reason",)
    assert quick.wordings_of("observer") == full.wordings


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"scene_ids": SCENES, "prior_scene_ids": SCENES[:2]}, "must include the run's scenes"),
        ({"prior_scene_ids": ("a", "a")}, "names 'a' twice"),
        ({"prior_scene_ids": ()}, "at least one scene"),
    ],
)
def test_prior_scenes_are_checked(changes: dict[str, object], message: str) -> None:
    with pytest.raises((InputError, ValueError), match=message):
        plan_sweep(SweepConfig(**changes))  # type: ignore[arg-type]


def test_quick_then_full_reuses_the_first_stage(tmp_path, monkeypatch) -> None:
    full = _full(scene_ids=SCENES[:3], controls=("clean", "blank"))
    monkeypatch.setattr(demo, "demo_config", lambda: full)
    out = tmp_path / "demo"
    args = ["demo", "--out", str(out), "--workers", "1"]
    first = runner.invoke(app, [*args, "--quick"])
    assert first.exit_code == 0, first.output
    n_quick = len(plan_sweep(demo.quick_config(full)).items)
    assert first.output.index("## Headline") < first.output.index(f"report: {out}")
    assert f"{n_quick} records written, 0 failed" in first.output
    with RunStore.open(out, read_only=True) as store:
        assert store.counts()["items"] == n_quick
    rest = runner.invoke(app, args)
    assert rest.exit_code == 0, rest.output
    n_full = len(plan_sweep(full).items)
    assert f"\n{n_full - n_quick} records written, 0 failed" in rest.output
    with RunStore.open(out, read_only=True) as store:  # no item twice: the same keys
        assert store.counts()["items"] == store.counts()["ok"] == n_full
    again = runner.invoke(app, [*args, "--quick"])
    assert again.exit_code == 0, again.output
    assert "holds the full demo" in again.output
    assert "## Headline" in again.output
    assert "records written" not in again.output


def test_a_one_scene_demo_skips_the_shuffled_control_with_a_note(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(demo, "demo_config", lambda: _full(scene_ids=None))
    out = tmp_path / "one"
    result = runner.invoke(app, ["demo", "--out", str(out), "--scenes", "skimage-chelsea"])
    assert result.exit_code == 0, result.output
    assert "the shuffled control is skipped: it needs at least 2 scenes" in result.output
    with RunStore.open(out, read_only=True) as store:
        config = store.manifest()["config"]
    assert config["scene_ids"] == ["skimage-chelsea"]
    assert config["controls"] == ["clean", "blank"]


def test_the_llm_perceiver_answers_the_first_scenes_of_seven_photos(monkeypatch) -> None:
    """The demo's slowest model (detector, then SmolLM2, per image) asks on the first
    LLM_PERCEIVER_SCENES scenes only, and those come from as many different photos."""
    from clearsight.scenes.bundled import bundled_specs
    from clearsight.sweep.specs import SweepItem

    monkeypatch.setattr(demo, "demo_skipped", lambda: {})
    config = demo.demo_config()
    assert config.model_scenes == {"perceiver:llm": demo.LLM_PERCEIVER_SCENES}
    items = [it for it in plan_sweep(config).items if isinstance(it, SweepItem)]
    asked = {it.scene.id for it in items if it.model == "perceiver:llm"}
    others = {it.scene.id for it in items if it.model == "perceiver:detector"}
    photos = {i: s.photo for i, s in bundled_specs().items()}
    assert len(asked) == demo.LLM_PERCEIVER_SCENES < len(others)
    assert len({photos[s] for s in asked}) == demo.LLM_PERCEIVER_SCENES
