"""The one configuration loader, :func:`clearsight.config.load_config`, on cases that show
its rules: :data:`~clearsight.config.NULL` sets None, a mapping overlays key by key, no file
means the defaults, and a check across fields keeps its own message (the properties are in
``test_config_overlay.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from clearsight.config import NULL, load_config
from clearsight.grounding import GroundingConfig
from clearsight.sweep.config import SweepConfig
from clearsight.validate import InputError


def _write(tmp_path: Path, fields: dict[str, Any]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(fields))
    return path


def test_null_sets_none_and_a_mapping_overlays_key_by_key(tmp_path: Path) -> None:
    fields = {"generator": "hf:a", "judge": "hf:b", "model_options": {"batch_size": 4, "x": 1}}
    path = _write(tmp_path, fields)
    got = load_config(
        path, GroundingConfig, {"generator": NULL, "model_options": {"batch_size": 2}}
    )
    assert (got.generator, got.judge) == (None, "hf:b")
    assert got.model_options == {"batch_size": 2, "x": 1}


def test_without_a_file_the_flags_lay_over_the_defaults() -> None:
    assert load_config(None, SweepConfig, {"seed": 3, "arms": None}) == SweepConfig(seed=3)
    assert load_config(None, SweepConfig) == SweepConfig()


def test_a_check_across_fields_keeps_its_own_message(tmp_path: Path) -> None:
    path = _write(tmp_path, {"model_wordings": {"hf:x": ["mcq.reason"]}})
    with pytest.raises(InputError) as info:
        load_config(path, SweepConfig)
    assert str(info.value) == (
        f"invalid sweep config in {path}: model_wordings names 'hf:x', which is not in models"
    )
