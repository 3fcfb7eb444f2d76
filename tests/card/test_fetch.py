"""``clearsight fetch``: idempotent (a verified cache is left alone, no tool is called), each
step skipped with a note naming the missing tool, and checksums refused when they differ."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from clearsight.fetch import steps as fetch
from clearsight.validate import InputError

FAKE = {
    "usr/share/darknet/data/dog.jpg": ("dog.jpg", hashlib.sha256(b"dog").hexdigest()),
    "usr/share/doc/darknet/copyright": ("COPYRIGHT", hashlib.sha256(b"(c)").hexdigest()),
}


def _no_subprocess(*args: Any, **kwargs: Any) -> None:
    raise AssertionError(f"no tool may run: {args}")


@pytest.fixture
def fake_photos(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch, "DARKNET_FILES", FAKE)
    monkeypatch.setattr(fetch.subprocess, "run", _no_subprocess)


@pytest.mark.usefixtures("fake_photos")
def test_verified_photos_are_ready_without_apt(tmp_path: Path) -> None:
    (tmp_path / "dog.jpg").write_bytes(b"dog")
    (tmp_path / "COPYRIGHT").write_bytes(b"(c)")
    for _ in range(2):
        result = fetch.fetch_photos(tmp_path, which=lambda tool: None)
        assert (result.step, result.status) == ("photos", "ready")


@pytest.mark.usefixtures("fake_photos")
def test_photos_without_apt_are_skipped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "dog.jpg").write_bytes(b"altered")  # a checksum mismatch counts as missing
    assert fetch.photo_problems(tmp_path) == [
        f"{tmp_path / 'dog.jpg'} does not match its recorded SHA-256",
        f"{tmp_path / 'COPYRIGHT'} is missing",
    ]
    result = fetch.fetch_photos(tmp_path, which=lambda tool: None if tool == "dpkg" else "/x")
    assert result.status == "skipped"
    assert "needs apt (dpkg not found)" in result.detail
    assert "clearsight fetch" in result.detail


@pytest.mark.usefixtures("fake_photos")
def test_extracted_photos_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    root = tmp_path / "x"
    (root / "usr/share/darknet/data").mkdir(parents=True)
    (root / "usr/share/doc/darknet").mkdir(parents=True)
    (root / "usr/share/darknet/data/dog.jpg").write_bytes(b"dog")
    (root / "usr/share/doc/darknet/copyright").write_bytes(b"(c)")
    assert fetch._verified_photos(root) == {"dog.jpg": b"dog", "COPYRIGHT": b"(c)"}
    (root / "usr/share/darknet/data/dog.jpg").write_bytes(b"cat")
    with pytest.raises(InputError, match=r"dog.jpg in the darknet package does not match"):
        fetch._verified_photos(root)


def test_detectors_without_npm_are_skipped_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    import clearsight.perceiver.fetch as detectors

    monkeypatch.setattr(detectors, "verify_models", lambda dest=None: ["centernet.bin is missing"])
    monkeypatch.setattr(detectors, "fetch_models", _no_subprocess)
    result = fetch.fetch_detectors(which=lambda tool: None)
    assert result.status == "skipped"
    assert "needs npm" in result.detail
    monkeypatch.setattr(detectors, "verify_models", lambda dest=None: [])
    assert fetch.fetch_detectors(which=lambda tool: None).status == "ready"


def test_embedded_models_without_pip_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch.subprocess, "run", _no_subprocess)
    result = fetch.fetch_embedded(find=lambda name: None)
    assert result.status == "skipped"
    assert "needs pip" in result.detail
    present = fetch.fetch_embedded(find=lambda name: None if name == "transformers" else object())
    assert present.status == "ready"  # both wheels installed: nothing is run
    assert "needs transformers" in present.detail


def test_an_unknown_step_is_refused() -> None:
    with pytest.raises(InputError, match="unknown fetch step 'maps'; the steps are photos, "):
        fetch.fetch_all(("photos", "maps"))
