"""The trackers' tests run with no tracker configuration of the machine."""

from __future__ import annotations

import pytest


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No tracker configuration of the machine leaks into a test."""
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
        monkeypatch.delenv(name, raising=False)
    for name in ("WANDB_PROJECT", "WANDB_MODE", "WANDB_DIR", "TRACKIO_PROJECT", "TRACKIO_DIR"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch
