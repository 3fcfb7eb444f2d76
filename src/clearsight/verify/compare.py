"""Two sweep runs of one design matched item by item: how far their answers and figures moved.

Two runs have one design when their configurations agree on everything but the models, their
options, wordings and conditions per model and the seed (:data:`FREE_FIELDS`): another
backend, another clearsight version or another seed of the same questions. An item is matched
across the runs by what it asks (:func:`_identity`: scene, target, task, the category asked,
wording, condition and level, the scene a shuffled control shows) and each run's model by its
place in its run's model list; answers and option probabilities are compared as the options'
*texts* (another seed orders the options differently), with the agreement table of
:mod:`clearsight.verify.pairs`.

The figures (:func:`paired_figures`), per task, model pair and arm, on the model's first letter
wording: accuracy at each level (clean and every level of the arm), the pooled ECE of the
internal confidence and its AURC, each run's value and the difference A - B with a 95 %
interval from one paired bootstrap over source photos: every replicate draws the photos once
(:func:`clearsight.metrics.bootstrap_weights`) and evaluates both runs on that draw, so the
scenes' own difficulty cancels in the difference. V*_acc (as log10 of metres) and the W of the
internal confidence, the verbalized confidence and the abstention are bootstrapped the same
way, each run's crossings evaluated on the draw
(:func:`clearsight.sweep.numbers.crossings.crossing_statistic`); a draw where a crossing is
undefined is left out of its interval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clearsight.store import RunStore
from clearsight.sweep.specs import PROTOCOL as SWEEP_KIND
from clearsight.validate import InputError
from clearsight.verify.comparison import Comparison, one_design
from clearsight.verify.pairs import agreement_table, differing, paired_readouts

__all__ = ["FREE_FIELDS", "Comparison", "compare_runs", "paired_figures"]

#: Configuration fields two runs of one design may differ in.
FREE_FIELDS = frozenset(
    {"models", "model_options", "model_wordings", "model_conditions", "observer", "seed"}
)

FloatArray = np.ndarray[Any, np.dtype[np.float64]]


def _protocol(run: Path, expect: str | None = None) -> str | None:
    """The protocol that made ``run`` (InputError: no run there, or not ``expect``)."""
    if not (Path(run) / "run.sqlite").is_file():
        raise InputError(f"{run} holds no run (no run.sqlite)")
    with RunStore.open(run, read_only=True) as store:
        if expect is not None:
            store.expect_protocol(expect)
        found = store.manifest().get("protocol")
    return None if found is None else str(found)


def _design(run: Path) -> tuple[dict[str, Any], list[str]]:
    """A sweep run's configuration without :data:`FREE_FIELDS`, and its models."""
    if not (Path(run) / "run.sqlite").is_file():
        raise InputError(f"{run} holds no run (no run.sqlite)")
    with RunStore.open(run, read_only=True) as store:
        store.expect_protocol(SWEEP_KIND)
        config = dict(store.manifest().get("config") or {})
    models = list(config.get("models") or [])
    return {k: v for k, v in config.items() if k not in FREE_FIELDS}, models


def _identity(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    """What an item asks, whatever the run's seed and model (see the module docstring)."""
    question = spec.get("question") or {}
    shown = spec.get("shown") or {}
    return (
        (spec.get("scene") or {}).get("id"),
        spec.get("target"),
        spec.get("task"),
        spec.get("asked"),
        question.get("asked_category"),
        spec.get("wording"),
        spec.get("condition"),
        spec.get("level_m"),
        spec.get("severity"),
        (shown.get("scene") or {}).get("id"),
    )


def _as_texts(spec: Mapping[str, Any], readouts: Mapping[str, Any]) -> dict[str, Any]:
    """Read-outs with the answer and the option probabilities named by option text."""
    question = spec.get("question") or {}
    text = dict(zip(question.get("letters", ()), question.get("options", ()), strict=False))
    out = dict(readouts)
    answer = readouts.get("answer")
    out["answer"] = text.get(answer, answer) if isinstance(answer, str) else answer
    probs = readouts.get("letter_probs")
    if probs is not None:
        out["letter_probs"] = {text.get(k, k): v for k, v in probs.items()}
    return out


def _items(run: Path, models: Sequence[str]) -> dict[tuple[Any, ...], tuple[str, dict[str, Any]]]:
    """A run's finished sweep items by (model's place, identity): key and text read-outs."""
    place = {m: i for i, m in enumerate(models)}
    out: dict[tuple[Any, ...], tuple[str, dict[str, Any]]] = {}
    with RunStore.open(run, read_only=True) as store:
        for rec in store.iter_records("ok", kind=SWEEP_KIND, raw=False):
            who = place.get(str(rec.spec.get("model")), -1)
            out[(who, *_identity(rec.spec))] = (rec.key, _as_texts(rec.spec, rec.readouts))
    return out


def compare_runs(
    run_a: Path, run_b: Path, *, tolerance: float, n_boot: int = 2000, seed: int = 0
) -> Comparison:
    """Match two sweep runs of one design item by item (module docstring), or two grounding
    runs (:mod:`clearsight.verify.compare_grounding`); InputError for a missing run, a run of
    another protocol, or two designs."""
    if _protocol(run_a) == "grounding":
        from clearsight.verify.compare_grounding import compare_grounding

        _protocol(run_b, "grounding")
        return compare_grounding(run_a, run_b, tolerance=tolerance, n_boot=n_boot, seed=seed)
    design_a, models_a = _design(run_a)
    design_b, models_b = _design(run_b)
    one_design(run_a, run_b, design_a, design_b)
    if len(models_a) != len(models_b):
        raise InputError(
            f"{run_a} asks {len(models_a)} models and {run_b} {len(models_b)}: compare pairs "
            "the models by their place in the run's list"
        )
    items_a, items_b = _items(run_a, models_a), _items(run_b, models_b)
    common = [k for k in items_a if k in items_b]
    labels = pd.DataFrame(
        {
            "key_a": [items_a[k][0] for k in common],
            "key_b": [items_b[k][0] for k in common],
            "model": [models_a[k[0]] if k[0] >= 0 else "" for k in common],
            "other": [models_b[k[0]] if k[0] >= 0 else "" for k in common],
            "scene": [k[1] for k in common],
            "condition": [k[7] for k in common],
            "level_m": [k[8] for k in common],
            "wording": [k[6] for k in common],
        }
    )
    paired = paired_readouts([items_a[k][1] for k in common], [items_b[k][1] for k in common])
    pairs = pd.concat([labels, paired], axis=1)
    figures = paired_figures(run_a, run_b, models_a, models_b, n_boot=n_boot, seed=seed)
    return Comparison(
        Path(run_a),
        Path(run_b),
        pairs,
        agreement_table(pairs),
        differing(pairs, tolerance),
        figures,
        len(items_a),
        len(items_b),
    )


def _cluster_columns(clusters: Sequence[str], union: Sequence[str]) -> Any:
    """Positions in ``union`` of the sorted distinct ``clusters`` (a statistic's columns)."""
    where = {c: i for i, c in enumerate(union)}
    return np.array([where[c] for c in sorted(set(clusters))], dtype=np.intp)


def _mean_stat(
    values: FloatArray, clusters: Sequence[str], union: Sequence[str]
) -> Callable[[FloatArray], FloatArray]:
    r"""The cluster-weighted mean :math:`\sum_c W_c S_c / \sum_c W_c n_c` as a statistic of
    the ``(rows, C)`` weights of the ``union`` clusters."""
    where = {c: i for i, c in enumerate(union)}
    idx = np.array([where[c] for c in clusters], dtype=np.intp)
    sums = np.bincount(idx, weights=values, minlength=len(union))
    counts = np.bincount(idx, minlength=len(union)).astype(np.float64)

    def stat(weights: FloatArray) -> FloatArray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray((weights @ sums) / (weights @ counts))[:, None]

    return stat


def _weighted(
    make: Callable[..., Callable[[FloatArray], FloatArray]],
    conf: FloatArray,
    correct: FloatArray,
    clusters: Sequence[str],
    union: Sequence[str],
) -> Callable[[FloatArray], FloatArray]:
    """A metric's cluster-weight statistic (``make(conf, correct, clusters)``, its columns the
    sorted distinct ``clusters``) as a statistic of the ``union`` clusters' weights."""
    stat = make(conf, correct, np.asarray(clusters, dtype=object))
    columns = _cluster_columns(clusters, union)
    return lambda weights: stat(weights[:, columns])


def _cells(
    rec: pd.DataFrame, model: str, task: str, arm: str, wording: str
) -> list[tuple[str, pd.DataFrame]]:
    """The accuracy cells of one model, task, arm and wording: clean and each level; then the
    answered items of clean and the arm, which the ECE and AURC are computed on."""
    mine = rec[(rec["model"] == model) & (rec["task"] == task) & (rec["wording"] == wording)]
    cells = [("accuracy (clean)", mine[mine["condition"] == "clean"])]
    arm_rows = mine[mine["condition"] == arm]
    for level in sorted(set(arm_rows["level_m"].dropna()), reverse=True):
        cells.append((f"accuracy ({arm} {level:g} m)", arm_rows[arm_rows["level_m"] == level]))
    pooled = mine[mine["condition"].isin(["clean", arm])]
    answered = pooled[(pooled["answered"] == 1.0) & np.isfinite(pooled["internal_conf"])]
    cells.append(("ECE internal (pooled)", answered))
    cells.append(("AURC internal (pooled)", answered))
    return cells


Stat = Callable[[FloatArray], FloatArray]


def _statistic(name: str, sub: pd.DataFrame, union: Sequence[str]) -> Stat:
    """The statistic of one cell figure on one run's rows."""
    from clearsight.metrics import aurc_statistic, calibration_statistic

    clusters = list(sub["cluster"])
    correct = sub["correct"].to_numpy(float)
    if name.startswith("accuracy"):
        return _mean_stat(correct, clusters, union)
    conf = sub["internal_conf"].to_numpy(float)
    make = calibration_statistic if name.startswith("ECE") else aurc_statistic
    full = _weighted(make, conf, correct, clusters, union)
    return lambda weights: full(weights)[:, :1]


@dataclass(frozen=True)
class _Crossings:
    """One run's crossings as a statistic of the union photos' weights (evaluated once per
    draw, whichever figures read it)."""

    fields: list[Any]
    pairs: list[tuple[int, int]]
    stat: Stat

    @classmethod
    def of(cls, data: Any, union: Sequence[str]) -> _Crossings | None:
        from clearsight.sweep.numbers.crossings import crossing_statistic

        found = crossing_statistic(data)
        if found is None:
            return None
        clusters, fields, pairs, stat = found
        columns = np.array([list(union).index(c) for c in clusters], dtype=np.intp)
        last: dict[str, Any] = {}

        def once(weights: FloatArray) -> FloatArray:
            if last.get("weights") is not weights:
                last["weights"], last["value"] = weights, stat(weights[:, columns])
            return np.asarray(last["value"])

        return cls(fields, pairs, once)

    def column(self, model: str, task: str, arm: str, wording: str, signal: str) -> int | None:
        """The statistic's column of V* (``signal`` accuracy) or of the W of ``signal``."""
        for x, f in enumerate(self.fields):
            if (f["model"], f["task"], f["arm"], f["wording"], f["signal"]) != (
                model,
                task,
                arm,
                wording,
                signal,
            ):
                continue
            if signal == "accuracy":
                return x
            return next(
                (len(self.fields) + p for p, (_, aware) in enumerate(self.pairs) if aware == x),
                None,
            )
        return None

    def figure(self, column: int) -> Stat:
        return lambda weights: self.stat(weights)[:, column : column + 1]


#: The crossing figures: name, signal, whether it is read in the verbalized wording.
_CROSSING_FIGURES = (
    ("log10 V*_acc (m)", "accuracy", False),
    ("W internal confidence", "internal_conf", False),
    ("W verbalized confidence", "verbal_conf", True),
    ("W abstention", "abstain", False),
)


def _crossing_figures(
    runs: tuple[_Crossings | None, _Crossings | None],
    names: tuple[str, str, str, str],
    wordings: tuple[str, str],
) -> list[tuple[str, Stat, Stat, int, int]]:
    """V*_acc and the three W of one model pair, task and arm, where both runs have them."""
    found_a, found_b = runs
    model_a, model_b, task, arm = names
    out: list[tuple[str, Stat, Stat, int, int]] = []
    if found_a is None or found_b is None:
        return out
    for name, signal, verbal in _CROSSING_FIGURES:
        wording = wordings[1] if verbal else wordings[0]
        if not wording:
            continue
        col_a = found_a.column(model_a, task, arm, wording, signal)
        col_b = found_b.column(model_b, task, arm, wording, signal)
        if col_a is not None and col_b is not None:
            out.append((name, found_a.figure(col_a), found_b.figure(col_b), 0, 0))
    return out


def paired_figures(
    run_a: Path,
    run_b: Path,
    models_a: Sequence[str],
    models_b: Sequence[str],
    *,
    n_boot: int,
    seed: int,
) -> pd.DataFrame:
    """One row per task, model pair, arm and figure: ``figure``, ``a``, ``b``, ``difference``
    (A - B), ``low``/``high`` (its paired 95 % interval), ``n_a``/``n_b`` (items; 0 for V* and
    W, which read every level). See the module docstring."""
    from clearsight.sweep.results import is_verbal, load_run_data

    data_a, data_b = load_run_data(run_a), load_run_data(run_b)
    rec_a, rec_b = data_a.records, data_b.records
    union = sorted(set(rec_a["cluster"]) | set(rec_b["cluster"]))
    crossings = (_Crossings.of(data_a, union), _Crossings.of(data_b, union))
    labels: list[dict[str, Any]] = []
    stats: list[tuple[Stat, Stat]] = []
    for model_a, model_b in zip(models_a, models_b, strict=True):
        for task in sorted(set(rec_a["task"].dropna())):
            asked = list(dict.fromkeys(rec_a[rec_a["model"] == model_a]["wording"].dropna()))
            letter = next((w for w in asked if not is_verbal(w)), "")
            verbal = next((w for w in asked if is_verbal(w)), "")
            shown = rec_a[rec_a["model"] == model_a]["condition"]
            for arm in sorted(set(shown) & {"fog", "water", "turbid"}):  # arms it was shown
                names = (model_a, model_b, task, arm)
                figures = _cell_figures((rec_a, rec_b), names, letter, union)
                figures += _crossing_figures(crossings, names, (letter, verbal))
                for name, sa, sb, n_a, n_b in figures:
                    labels.append(
                        {
                            "task": task,
                            "model": model_a,
                            "other": model_b,
                            "arm": arm,
                            "figure": name,
                            "n_a": n_a,
                            "n_b": n_b,
                        }
                    )
                    stats.append((sa, sb))
    return _paired_frame(labels, stats, len(union), n_boot=n_boot, seed=seed)


def _cell_figures(
    records: tuple[pd.DataFrame, pd.DataFrame],
    names: tuple[str, str, str, str],
    letter: str,
    union: list[Any],
) -> list[tuple[str, Stat, Stat, int, int]]:
    """The per-cell figures (accuracy per level, ECE, AURC) of model A and model B of
    ``names`` (model A, model B, task, arm) in the letter wording, where both have items."""
    if not letter:
        return []
    (rec_a, rec_b), (model_a, model_b, task, arm) = records, names
    cells_b = dict(_cells(rec_b, model_b, task, arm, letter))
    figures: list[tuple[str, Stat, Stat, int, int]] = []
    for name, sub_a in _cells(rec_a, model_a, task, arm, letter):
        sub_b = cells_b[name]
        if len(sub_a) and len(sub_b):
            sa, sb = _statistic(name, sub_a, union), _statistic(name, sub_b, union)
            figures.append((name, sa, sb, len(sub_a), len(sub_b)))
    return figures


def _paired_frame(
    labels: list[dict[str, Any]],
    stats: list[tuple[Stat, Stat]],
    n_clusters: int,
    *,
    n_boot: int,
    seed: int,
) -> pd.DataFrame:
    """Each labelled pair of statistics with A, B, A - B and the difference's interval, from
    one paired bootstrap over the ``n_clusters`` photos (both runs evaluated on each draw)."""
    from clearsight.metrics import cluster_bootstrap

    if not stats:
        return pd.DataFrame(columns=[*_FIGURE_COLUMNS])

    def both(weights: FloatArray) -> FloatArray:
        cols = []
        for sa, sb in stats:
            a, b = sa(weights)[:, 0], sb(weights)[:, 0]
            cols += [a, b, a - b]
        return np.column_stack(cols)

    boot = cluster_bootstrap(both, n_clusters, n_boot=n_boot, seed=seed)
    frame = pd.DataFrame(labels)
    for k, name in enumerate(("a", "b", "difference")):
        frame[name] = boot.estimate[k::3]
    frame["low"], frame["high"] = boot.low[2::3], boot.high[2::3]
    return frame[list(_FIGURE_COLUMNS)]


_FIGURE_COLUMNS = (
    "task",
    "model",
    "other",
    "arm",
    "figure",
    "a",
    "b",
    "difference",
    "low",
    "high",
    "n_a",
    "n_b",
)
