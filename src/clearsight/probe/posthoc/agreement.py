"""How well a judge's consistency u agrees with another judge's or with people's (Table 5).

docs/methods.md §6 asks for the agreement between judges; the paper's App. A.2 validates the
LLM judge against expert labels of u: exact and within-1 agreement, mean absolute error,
Cohen's kappa (plain and quadratic-weighted) and Pearson correlation. The statistics are pure
functions of two integer series (:func:`cohen_kappa`, :func:`pearson`, gathered by
:func:`agreement`); :func:`judge_agreement` recomputes u of stored sensor replies with two
judges, and :func:`human_agreement` compares each judge with people's labels, read from a
small JSONL format (:func:`read_human_labels`):

    {"query": "...", "reply": "...", "samples": ["...", ...], "u": 3}
    {"query": "...", "reply": "...", "samples": ["...", ...], "same": [true, false, ...]}

one sensor reply per line: the query, the realised reply, its K samples and either the
person's u (samples that say the same as the reply, the reply itself included, so 1..K) or the
person's verdict per sample (``same``; u is their count). A line may carry any other field
(``key``, ``annotator``...), which is not read. :func:`store_validation` keeps each judge's
result as a record of kind ``probe.judges`` in the probe run (keyed by the labels' content
hash and the judge), which the report's Table 5 lists (:func:`validation_table`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.probe.judges import Judge, consistency
from clearsight.probe.readouts import JudgeValidationReadouts
from clearsight.probe.specs import JUDGE_VALIDATION_PROTOCOL, JudgeValidationSpec
from clearsight.seeding import content_hash
from clearsight.store import Record, RunStore
from clearsight.validate import InputError, jsonl_values

__all__ = [
    "Agreement",
    "HumanLabel",
    "agreement",
    "cohen_kappa",
    "human_agreement",
    "judge_agreement",
    "labels_hash",
    "pearson",
    "read_human_labels",
    "read_label_file",
    "store_validation",
    "stored_validations",
    "validation_table",
]


#: What a label file's lines are read as.
LabelT = TypeVar("LabelT")


def _pair(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Two equally long, non-empty 1-D arrays (InputError otherwise)."""
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise InputError("agreement needs two equally long, non-empty series")
    return x, y


def cohen_kappa(
    a: Sequence[int],
    b: Sequence[int],
    labels: Sequence[int],
    weights: Literal["quadratic"] | None = None,
) -> float:
    """Cohen's kappa of two raters' labels over the categories ``labels`` (in their order).

    With ``O`` the confusion matrix of the n pairs as shares (``O[i, j]``: share with a's label
    ``labels[i]`` and b's ``labels[j]``), ``E = outer(rows of O, columns of O)`` the shares
    expected by chance and disagreement weights ``w[i, j] = 1[i != j]`` (plain) or
    ``(i - j)^2`` (``weights="quadratic"``, i and j the category positions)::

        kappa = 1 - sum(w * O) / sum(w * E)

    1 is perfect agreement, 0 chance level. When chance predicts no disagreement at all (both
    raters gave one and the same label throughout) the raters agree perfectly: kappa is 1.
    A label outside ``labels`` is an InputError.
    """
    x, y = _pair(a, b)
    index = {label: i for i, label in enumerate(labels)}
    unknown = sorted({int(v) for v in (*x.tolist(), *y.tolist())} - set(index))
    if unknown:
        raise InputError(f"labels {unknown} are not among the categories {list(labels)}")
    m = len(labels)
    observed = np.zeros((m, m))
    np.add.at(observed, ([index[int(v)] for v in x], [index[int(v)] for v in y]), 1.0)
    observed /= x.size
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    pos = np.arange(m)
    diff = pos[:, None] - pos[None, :]
    weight = (diff != 0).astype(float) if weights is None else diff.astype(float) ** 2
    chance = float((weight * expected).sum())
    if chance == 0.0:
        return 1.0
    return 1.0 - float((weight * observed).sum()) / chance


def pearson(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson's correlation ``r = sum((a - mean a)(b - mean b)) / sqrt(sum((a - mean a)^2)
    sum((b - mean b)^2))``; NaN when either series is constant (r is undefined)."""
    x, y = _pair(a, b)
    dx = x.astype(np.float64) - x.mean()
    dy = y.astype(np.float64) - y.mean()
    scale = float(np.sqrt((dx * dx).sum() * (dy * dy).sum()))
    return float("nan") if scale == 0.0 else float((dx * dy).sum()) / scale


@dataclass(frozen=True)
class Agreement:
    """How two series of u agree over ``n`` sensor replies: exact and within-1 agreement
    (shares), mean absolute error, Cohen's kappa plain and quadratic-weighted (categories
    1..K) and Pearson correlation (NaN where one side is constant)."""

    n: int
    exact: float
    within1: float
    mae: float
    kappa: float
    kappa_quadratic: float
    pearson: float

    def to_json(self) -> dict[str, float]:
        """JSON-able dict."""
        return {k: float(v) for k, v in self.__dict__.items()}


def agreement(u_a: Sequence[int], u_b: Sequence[int], k: int) -> Agreement:
    """Agreement of two u series on 1..k (see :class:`Agreement`): ``exact = mean(a == b)``,
    ``within1 = mean(|a - b| <= 1)``, ``mae = mean(|a - b|)``, kappa by :func:`cohen_kappa`
    with the categories 1..k, Pearson by :func:`pearson`."""
    a, b = _pair(np.asarray(u_a, dtype=np.int64), np.asarray(u_b, dtype=np.int64))
    if min(a.min(), b.min()) < 1 or max(a.max(), b.max()) > k:
        raise InputError(f"u must lie in 1..{k}")
    diff = np.abs(a - b)
    labels = list(range(1, k + 1))
    return Agreement(
        n=int(a.size),
        exact=float((diff == 0).mean()),
        within1=float((diff <= 1).mean()),
        mae=float(diff.mean()),
        kappa=cohen_kappa(a.tolist(), b.tolist(), labels),
        kappa_quadratic=cohen_kappa(a.tolist(), b.tolist(), labels, weights="quadratic"),
        pearson=pearson(a.tolist(), b.tolist()),
    )


def _judge_u(judge: Judge, replies: Sequence[Any]) -> tuple[list[int], float]:
    """u of each reply under ``judge`` and the seconds it took."""
    started = time.perf_counter()
    us = [consistency(judge, r.reply, r.samples, r.query)[0] for r in replies]
    return us, time.perf_counter() - started


def judge_agreement(
    replies: Sequence[Any], judge_a: Judge, judge_b: Judge, *, limit: int | None = None
) -> tuple[Agreement, tuple[float, float]]:
    """Recompute u of stored sensor replies (objects with ``query``, ``reply``, ``samples``,
    ``k`` and ``error``, e.g. :class:`~clearsight.probe.sensor.SensorReply`) with two judges;
    return their :class:`Agreement` and the seconds each judge took."""
    usable = [r for r in replies if r.error is None and len(r.samples) > 1][:limit]
    if not usable:
        raise InputError("no sensor replies with K > 1 samples to judge")
    u_a, s_a = _judge_u(judge_a, usable)
    u_b, s_b = _judge_u(judge_b, usable)
    k = max(len(r.samples) for r in usable)
    return agreement(u_a, u_b, k), (s_a, s_b)


# --------------------------------------------------------------------------------------------
# People's labels of u
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HumanLabel:
    """One sensor reply with a person's u (``line``: where it stands in its file). Shaped like
    a stored reply (``query``, ``reply``, ``samples``, ``k``, ``error``) so a judge can
    recompute its u."""

    query: str
    reply: str
    samples: tuple[str, ...]
    u: int
    line: int = 0
    error: None = None

    @property
    def k(self) -> int:
        """K, the samples of the reply."""
        return len(self.samples)


def _label(value: Any, source: Path, line: int) -> HumanLabel:
    """The :class:`HumanLabel` of the JSONL value on ``line`` of ``source`` (InputError naming
    both)."""
    where = f"{source}:{line}"
    if not isinstance(value, dict):
        raise InputError(f"{where}: a label is a JSON object")
    samples = value.get("samples")
    if (
        not isinstance(samples, list)
        or len(samples) < 2
        or not all(isinstance(s, str) for s in samples)
    ):
        raise InputError(f"{where}: 'samples' must be a list of at least two reply strings")
    reply = value.get("reply")
    if not isinstance(reply, str) or reply not in samples:
        raise InputError(f"{where}: 'reply' must be the realised reply, one of the samples")
    same, u = value.get("same"), value.get("u")
    if (same is None) == (u is None):
        raise InputError(f"{where}: give the person's 'u' or their per-sample 'same', one of them")
    if same is not None:
        if not isinstance(same, list) or len(same) != len(samples):
            raise InputError(f"{where}: 'same' needs one true/false per sample")
        if not all(isinstance(v, bool) for v in same):
            raise InputError(f"{where}: 'same' holds true or false only")
        if not same[samples.index(reply)]:
            raise InputError(f"{where}: the reply itself must be marked the same")
        u = sum(same)
    if isinstance(u, bool) or not isinstance(u, int) or not 1 <= u <= len(samples):
        raise InputError(f"{where}: u must be an integer in 1..{len(samples)}, got {u!r}")
    return HumanLabel(str(value.get("query", "")), reply, tuple(samples), u, line)


def read_label_file(
    path: Path | str, what: str, parse: Callable[[Any, Path, int], LabelT]
) -> list[LabelT]:
    """Each non-blank line of the JSONL file ``path`` read by ``parse(value, file, line)``;
    InputError when the file cannot be read (``what`` names it) or holds no label."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the {what} {source}: {exc}") from exc
    labels = [parse(value, source, line) for line, value in jsonl_values(text, source)]
    if not labels:
        raise InputError(f"{source} holds no labels")
    return labels


def read_human_labels(path: Path | str) -> list[HumanLabel]:
    """The labels of the JSONL file ``path`` (format in the module docstring)."""
    return read_label_file(path, "human labels", _label)


def human_agreement(
    labels: Sequence[HumanLabel], judges: Sequence[Judge]
) -> dict[str, tuple[Agreement, float]]:
    """Each judge's u against the people's (by judge name: its :class:`Agreement` with the
    humans, K the largest of the labels', and the seconds the judge took)."""
    if not labels:
        raise InputError("no human labels to compare the judges with")
    k = max(label.k for label in labels)
    human = [label.u for label in labels]
    out = {}
    for judge in judges:
        us, seconds = _judge_u(judge, labels)
        out[judge.name] = (agreement(us, human, k), seconds)
    return out


def labels_hash(labels: Sequence[HumanLabel]) -> str:
    """Content hash of the labels (query, reply, samples and the person's u of each)."""
    return content_hash([[x.query, x.reply, list(x.samples), x.u] for x in labels])


def store_validation(
    run_dir: Path, labels: Sequence[HumanLabel], results: dict[str, tuple[Agreement, float]]
) -> list[str]:
    """Store each judge's validation against the labels in the probe run ``run_dir`` (one
    record per judge, holding the writer lock; Table 5 of the report reads them); return the
    keys. A run of another protocol is an InputError."""
    from clearsight.driver import run_lock
    from clearsight.probe.transcript import PROTOCOL

    digest = labels_hash(labels)
    with run_lock(run_dir), RunStore.open(run_dir) as store:
        store.expect_protocol(PROTOCOL)
        keys = []
        for judge, (result, seconds) in results.items():
            spec = JudgeValidationSpec(labels=digest, judge=judge)
            store.add_items([(spec.key, spec.kind, spec.to_json())])
            readouts = {"judge": judge, "labels": digest, **result.to_json(), "seconds": seconds}
            store.write_records([Record(spec.key, "ok", None, None, readouts, seconds)])
            keys.append(spec.key)
    return keys


def stored_validations(
    store: RunStore,
    kind: tuple[str, type[Mapping[str, Any]]],
    columns: Sequence[str],
    percent: Sequence[str],
) -> pd.DataFrame:
    """Every stored validation of ``kind`` (the item kind and its registered read-out type) in
    the run, one row each with ``columns``: the ``percent`` shares times 100, ``labels`` (the
    labels' hash) cut to 12 characters, ``n`` an integer (empty when none is stored)."""
    read = store.iter_records("ok", kind=kind[0], raw=False, readouts=kind[1])
    rows = [dict(r.readouts) for r in read]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    frame[list(percent)] *= 100
    frame["labels"] = frame["labels"].str[:12]
    frame["n"] = frame["n"].astype(int)
    return frame[list(columns)]


def validation_table(store: RunStore) -> pd.DataFrame:
    """Table 5: every stored judge validation of the run, one row per judge and label set,
    the shares as percent (empty when none is stored)."""
    columns = ["judge", "labels", "n", "exact", "within1", "mae", "kappa", "kappa_quadratic"]
    percent = ["exact", "within1"]
    kind = (JUDGE_VALIDATION_PROTOCOL, JudgeValidationReadouts)
    return stored_validations(store, kind, [*columns, "pearson"], percent)
