"""Two trajectory-grounding runs of one design matched item by item: how far their read-outs
and their TGS figures moved.

Two grounding runs have one design when their configurations agree on everything but
:data:`FREE_FIELDS` (the measured model and its options, the generator and judge models, the
seed, the batching and the report's bootstrap draws). An elicitation is matched across the runs
by its problem, variant (which trajectory, which side, which masked share) and read-out; an own
trajectory by its problem. The elicitations are compared by the Jensen–Shannon divergence of
their 11-way distributions and the |Δ| of their expected confidences, the trajectories by the
agreement of their answers (the agreement table of :mod:`clearsight.faces.pairs`).

The figures (:func:`grounding_figures`), per read-out: TGS-self and TGS-pair per axis and
averaged, each run's value on the problems both runs score, and the difference A - B with a 95 %
interval from grounding's own two-stage bootstrap over benchmarks and problems
(:func:`clearsight.grounding.tgs.two_stage_score`, :func:`~clearsight.grounding.tgs.pair_score`)
applied to the per-problem differences A - B: the scores are means of per-problem values, so
the score of the differences is the difference of the scores, and each replicate draws one set
of problems for both runs (paired).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clearsight.faces.comparison import Comparison, one_design
from clearsight.faces.pairs import agreement_table, differing, paired_readouts

if TYPE_CHECKING:
    from clearsight.grounding.tgs import Score

__all__ = ["FREE_FIELDS", "compare_grounding", "elicitation_identity", "grounding_figures"]

#: Configuration fields two grounding runs of one design may differ in.
FREE_FIELDS = frozenset(
    {"model", "model_options", "generator", "judge", "seed", "unit_size", "n_boot"}
)

#: The per-problem columns of :func:`clearsight.grounding.tgs.item_differences` compared, and
#: their names in the figures.
_SCORES = {
    "tgs_self": "TGS-self",
    "tgs_pair_vision": "TGS-pair vision",
    "tgs_pair_reasoning": "TGS-pair reasoning",
    "tgs_pair_answer": "TGS-pair answer",
}


#: What compare.html says of how two grounding runs' items were matched and the figures
#: bootstrapped.
COMPARE_NOTE = (
    "elicitations matched by problem, variant and read-out (compared by the JSD "
    "of their 11-way distributions and the |Δ| of their expected confidence), own trajectories "
    "by problem (their answers). TGS figures per read-out on the problems both runs score; "
    "differences A - B with 95 % intervals from the two-stage bootstrap (benchmarks, then "
    "problems) of the per-problem differences, one draw of problems for both runs."
)


def _design(run: Path) -> tuple[dict[str, Any], str]:
    """A grounding run's configuration without :data:`FREE_FIELDS`, and its model."""
    from clearsight.store import RunStore

    with RunStore.open(run, read_only=True) as store:
        config = dict(store.manifest().get("config") or {})
    return {k: v for k, v in config.items() if k not in FREE_FIELDS}, str(config.get("model"))


def elicitation_identity(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a stored elicitation is whatever the run: its problem, variant (which trajectory,
    which side, which masked share) and read-out; two runs' elicitations are matched by it."""
    from clearsight.grounding.confidence.methods import DEFAULT_READOUT

    readout = (spec.get("readout") or {}).get("name", DEFAULT_READOUT)
    return (spec["problem"]["id"], spec["variant"], readout)


def _items(run: Path) -> dict[tuple[Any, ...], tuple[str, Mapping[str, Any]]]:
    """A run's finished elicitations by (problem, variant, read-out) and own trajectories by
    problem: key and read-outs."""
    from clearsight.grounding.specs import ELICIT, TRAJECTORY
    from clearsight.store import RunStore

    out: dict[tuple[Any, ...], tuple[str, Mapping[str, Any]]] = {}
    with RunStore.open(run, read_only=True) as store:
        for rec in store.iter_records("ok", kind=ELICIT, raw=False):
            out[elicitation_identity(rec.spec)] = (rec.key, rec.readouts)
        for rec in store.iter_records("ok", kind=TRAJECTORY, raw=False):
            out[(rec.spec["problem"]["id"], "trajectory", "")] = (rec.key, rec.readouts)
    return out


def compare_grounding(
    run_a: Path, run_b: Path, *, tolerance: float, n_boot: int = 2000, seed: int = 0
) -> Comparison:
    """Match two grounding runs of one design item by item (module docstring): a
    :class:`~clearsight.faces.comparison.Comparison`; InputError for two designs."""
    (design_a, model_a), (design_b, model_b) = _design(run_a), _design(run_b)
    one_design(run_a, run_b, design_a, design_b)
    items_a, items_b = _items(run_a), _items(run_b)
    common = [k for k in items_a if k in items_b]
    labels = pd.DataFrame(
        {
            "key_a": [items_a[k][0] for k in common],
            "key_b": [items_b[k][0] for k in common],
            "model": model_a,
            "other": model_b,
            "scene": [k[0] for k in common],
            "condition": [k[1] for k in common],
            "level_m": np.nan,
            "wording": [k[2] for k in common],
        }
    )
    paired = paired_readouts([items_a[k][1] for k in common], [items_b[k][1] for k in common])
    pairs = pd.concat([labels, paired], axis=1)
    figures = grounding_figures(run_a, run_b, n_boot=n_boot, seed=seed)
    table, differ = agreement_table(pairs), differing(pairs, tolerance)
    return Comparison(
        Path(run_a),
        Path(run_b),
        pairs,
        table,
        differ,
        figures,
        len(items_a),
        len(items_b),
        protocol="grounding",
        note=COMPARE_NOTE,
    )


def _differences(run: Path) -> dict[str, pd.DataFrame]:
    """Per read-out, the per-problem TGS differences of a run
    (:func:`clearsight.grounding.tgs.item_differences`)."""
    from clearsight.grounding.results import load_grounding_results
    from clearsight.grounding.tgs import item_differences

    elicitations = load_grounding_results(run).elicitations
    if elicitations.empty:
        return {}
    return {
        str(name): item_differences(group)
        for name, group in elicitations.groupby("readout", sort=True)
    }


def _paired_scores(
    a: pd.DataFrame, b: pd.DataFrame, bench: list[str], *, n_boot: int, seed: int
) -> dict[str, tuple[Score, Score, Score]]:
    """Per TGS figure (each score column and TGS-pair) its two-stage score in run A, in run B
    and of their difference A - B per problem (the paired interval), from the per-problem
    columns ``a`` and ``b`` of the same problems in the same order."""
    from clearsight.grounding.tgs import pair_score, two_stage_score

    delta = a.assign(**{c: a[c] - b[c] for c in _SCORES})
    scores = {
        name: (
            two_stage_score(col, a[col], bench, n_boot, seed),
            two_stage_score(col, b[col], bench, n_boot, seed),
            two_stage_score(col, delta[col], bench, n_boot, seed),
        )
        for col, name in _SCORES.items()
    }
    scores["TGS-pair"] = (
        pair_score(a, n_boot, seed),
        pair_score(b, n_boot, seed),
        pair_score(delta, n_boot, seed),
    )
    return scores


def grounding_figures(run_a: Path, run_b: Path, *, n_boot: int, seed: int) -> pd.DataFrame:
    """Per read-out the TGS figures of both runs on their common problems and the paired
    two-stage interval of A - B (module docstring); the columns of
    :func:`clearsight.sweep.comparison.paired.paired_figures` (``task``: the read-out)."""
    (_, model_a), (_, model_b) = _design(run_a), _design(run_b)
    diffs_a, diffs_b = _differences(run_a), _differences(run_b)
    rows = []
    for readout in (r for r in diffs_a if r in diffs_b):
        both = diffs_a[readout].merge(diffs_b[readout], on=["problem", "benchmark"])
        bench = both["benchmark"].astype(str).tolist()
        a, b = pd.DataFrame({"benchmark": bench}), pd.DataFrame({"benchmark": bench})
        for col in _SCORES:
            va, vb = both[f"{col}_x"].to_numpy(float), both[f"{col}_y"].to_numpy(float)
            keep = np.isfinite(va) & np.isfinite(vb)  # the problems both runs score
            a[col], b[col] = np.where(keep, va, np.nan), np.where(keep, vb, np.nan)
        scores = _paired_scores(a, b, bench, n_boot=n_boot, seed=seed)
        for name, (sa, sb, sd) in scores.items():
            rows.append(
                {
                    "task": readout,
                    "model": model_a,
                    "other": model_b,
                    "arm": "",
                    "figure": name,
                    "a": sa.interval.estimate,
                    "b": sb.interval.estimate,
                    "difference": sd.interval.estimate,
                    "low": sd.interval.low,
                    "high": sd.interval.high,
                    "n_a": sa.n_items,
                    "n_b": sb.n_items,
                }
            )
    return pd.DataFrame(rows)
