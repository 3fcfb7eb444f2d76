"""The public API: ``clearsight`` reaches each protocol's configuration, run, analysis and
report; every name of it and of the protocol packages' faces resolves to a real object (a face
row left behind by a move fails here, not in a user's script); and importing it stays cheap."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import clearsight

FACES = ("clearsight", "clearsight.sweep", "clearsight.grounding", "clearsight.probe")


@pytest.mark.parametrize("face", FACES)
def test_every_name_of_a_face_resolves(face: str) -> None:
    module = importlib.import_module(face)
    names = [n for n in module.__all__ if n != "__version__"]
    assert names
    for name in names:
        assert getattr(module, name) is not None, f"{face}.{name}"
    with pytest.raises(AttributeError, match="no attribute"):
        module.no_such_name  # noqa: B018 - the attribute access is the test


@pytest.mark.parametrize(
    ("config", "entry_points"),
    [
        ("SweepConfig", ("run_sweep", "analyse_sweep", "build_sweep_report")),
        ("GroundingConfig", ("run_grounding", "analyse_grounding", "build_grounding_report")),
        ("ProbeConfig", ("run_probe", "analyse_probe", "build_probe_report")),
    ],
)
def test_each_protocol_is_reached_from_the_package(
    config: str, entry_points: tuple[str, ...]
) -> None:
    model = getattr(clearsight, config)
    assert model().model_dump()  # a configuration with every field defaulted
    protocol = config.removesuffix("Config").lower()
    face = importlib.import_module(f"clearsight.{protocol}")
    for name in entry_points:
        assert callable(getattr(clearsight, name))
        assert getattr(clearsight, name) is getattr(face, name)


def test_importing_clearsight_loads_no_heavy_library() -> None:
    code = (
        "import sys, clearsight\n"
        "print(sorted(m for m in ('torch', 'transformers', 'pandas', 'numba', 'matplotlib')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
