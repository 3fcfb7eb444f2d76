"""A run configuration's dump leaves out the fields added after runs were stored while they hold
their default, so a run stored before them resumes under the same config hash."""

from __future__ import annotations

from typing import Any

import pytest

from clearsight.grounding import GroundingConfig
from clearsight.probe import ProbeConfig
from clearsight.probe.reasoner.uot_search import SearchSettings
from clearsight.provenance import RunConfig
from clearsight.sweep.config import SweepConfig

_TURBID = {"turbid_absorption_per_m": (0.4, 0.1, 0.05), "turbid_scattering_per_m": (0.2,) * 3}

#: Configurations that set fields added later to other values than their defaults.
CHANGED: dict[type[RunConfig], list[dict[str, Any]]] = {
    SweepConfig: [
        {"wording_scenes": {"mcq.reason": 3}},
        {"arms": ("fog", "turbid"), **_TURBID},
        {"prior_scene_ids": ("skimage-chelsea", "skimage-coffee")},
        {"models": ("observer",), "model_scenes": {"observer": 2}},
        {"w_accuracy": "own"},
        {"imagenet_c_corruptions": ("fog", "snow")},
        {"conformal_alpha": 0.1},
    ],
    ProbeConfig: [{"uot": SearchSettings(depth=2)}, {"judge_model": "hf:smollm2-135m"}],
    GroundingConfig: [{"bench": "b.jsonl"}, {"variation_samples": 3}, {"readouts": ("ptrue",)}],
}


@pytest.mark.parametrize("model", list(CHANGED), ids=lambda m: m.__name__)
def test_later_fields_are_left_out_at_their_default_only(model: type[RunConfig]) -> None:
    later = set(model.added_later)
    assert later == {k for c in CHANGED[model] for k in c} & later  # every one exercised
    default = model().model_dump(mode="json")
    assert not later & set(default)
    assert model.model_validate(default) == model()
    for fields in CHANGED[model]:
        config = model(**fields)
        dumped = config.model_dump(mode="json")
        assert later & set(dumped) == later & set(fields)  # only the ones set are dumped
        assert set(default) <= set(dumped)
        assert model.model_validate(dumped) == config  # a stored dump reads back the same
