"""The trackers' tests run with no tracker configuration of the machine; trackio (which reads
``TRACKIO_DIR`` once, when imported) writes into a fresh folder of its own."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

os.environ["TRACKIO_DIR"] = tempfile.mkdtemp(prefix="clearsight-trackio-")
atexit.register(shutil.rmtree, os.environ["TRACKIO_DIR"], ignore_errors=True)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No tracker configuration of the machine leaks into a test, and none a test's tracker
    sets into the next: MLflow's HTTP settings, which the MLflow sink sets where unset, are
    recorded as absent (set, then removed: the monkeypatch removes them again after)."""
    from clearsight.track.to_mlflow import QUICK_HTTP

    for name in QUICK_HTTP:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    for name in (
        *("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"),
        *("WANDB_PROJECT", "WANDB_MODE", "WANDB_DIR", "WANDB_DATA_DIR"),
        *("TRACKIO_SPACE_ID", "TRACKIO_SERVER_URL"),
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch
