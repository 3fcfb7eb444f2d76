"""Two sweep runs of one design matched item by item: how far their answers and figures moved.

Two runs have one design when their configurations agree on everything but the models, their
options, wordings and conditions per model and the seed (:data:`FREE_FIELDS`): another
backend, another clearsight version or another seed of the same questions. An item is matched
across the runs by what it asks (:func:`item_identity`: scene, target, task, the category asked,
wording, condition and level, the scene a shuffled control shows) and each run's model by its
place in its run's model list; answers and option probabilities are compared as the options'
*texts* (another seed orders the options differently), with the agreement table of
:mod:`clearsight.faces.pairs`.

The figures: :func:`clearsight.sweep.comparison.paired.paired_figures`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from clearsight.faces.comparison import Comparison, one_design
from clearsight.faces.pairs import agreement_table, differing, paired_readouts
from clearsight.store import RunStore
from clearsight.sweep.comparison.paired import paired_figures
from clearsight.sweep.specs import PROTOCOL as SWEEP_KIND
from clearsight.validate import InputError

__all__ = ["FREE_FIELDS", "Asked", "compare_sweeps", "item_identity"]

#: Configuration fields two runs of one design may differ in.
FREE_FIELDS = frozenset(
    {"models", "model_options", "model_wordings", "model_conditions", "observer", "seed"}
)


#: What compare.html says of how two sweep runs' items were matched and the figures
#: bootstrapped.
COMPARE_NOTE = (
    "matched by what they ask; answers compared as option texts. Figures on each "
    "model's first letter wording (W of the verbalized confidence on its first verbalized one); "
    "differences A - B with 95 % intervals from one paired bootstrap over source photos (both "
    "runs evaluated on every draw)."
)


def _design(run: Path) -> tuple[dict[str, Any], list[str]]:
    """A sweep run's configuration without :data:`FREE_FIELDS`, and its models."""
    if not (Path(run) / "run.sqlite").is_file():
        raise InputError(f"{run} holds no run (no run.sqlite)")
    with RunStore.open(run, read_only=True) as store:
        store.expect_protocol(SWEEP_KIND)
        config = dict(store.manifest().get("config") or {})
    models = list(config.get("models") or [])
    return {k: v for k, v in config.items() if k not in FREE_FIELDS}, models


class Asked(NamedTuple):
    """What a sweep item asks, whatever the run's seed and model: the fields an item is
    matched by across runs (see the module docstring), from its stored spec by
    :func:`item_identity`."""

    scene: Any
    target: Any
    task: Any
    asked: Any
    asked_category: Any
    wording: Any
    condition: Any
    level_m: Any
    severity: Any
    shown: Any


def item_identity(spec: Mapping[str, Any]) -> Asked:
    """What a stored sweep item asks (:class:`Asked`), whatever the run's seed and model:
    two runs' items are the same item when these are equal (and so are their models' places)."""
    question = spec.get("question") or {}
    shown = spec.get("shown") or {}
    return Asked(
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
            out[(who, *item_identity(rec.spec))] = (rec.key, _as_texts(rec.spec, rec.readouts))
    return out


def compare_sweeps(
    run_a: Path, run_b: Path, *, tolerance: float, n_boot: int = 2000, seed: int = 0
) -> Comparison:
    """Match two sweep runs of one design item by item (module docstring); InputError for a
    missing run, a run of another protocol, or two designs (what the sweep's face answers to
    ``clearsight compare``: :func:`clearsight.verify.compare_runs`)."""
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
        note=COMPARE_NOTE,
    )
