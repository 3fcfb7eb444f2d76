"""Table VI: the verbalized-confidence wordings compared on matched images (paper §IV-D), and
the records of each model's main wording (:func:`main_wording_records`).

The paper asked its three verbalized wordings on the first 300 of its 1000 images and compares
them there: the same images under every wording, so a difference between two rows is the
wording's, not the images'. :func:`wording_table` does the same with any run: per model and
task, the *matched* scene set is the scenes on which the model answered every verbalized wording
it was asked (with ``wording_scenes`` limiting them all to the first N scenes, those N; with one
limited and one not, the limited one's), and every number of the table is computed on it alone.
"""

from __future__ import annotations

import math

import pandas as pd

from clearsight.sweep.results import RunData, is_person, is_verbal, level_label, primary_wording

__all__ = ["WORDING_COLUMNS", "main_wording_records", "wording_table"]

#: The columns of :func:`wording_table`.
WORDING_COLUMNS = (
    "model",
    "condition",
    "x",
    "level",
    "wording",
    "n_scenes",
    "n",
    "accuracy",
    "verbal_conf",
    "verbal_parsed",
)


def _matched_scenes(mine: pd.DataFrame, wordings: list[str]) -> set[str]:
    """The scenes on which every one of ``wordings`` has a record in ``mine``."""
    sets = [set(mine.loc[mine["wording"] == w, "scene"].astype(str)) for w in wordings]
    return set.intersection(*sets) if sets else set()


def _row(sub: pd.DataFrame) -> dict[str, float]:
    """Items, accuracy (abstentions count as wrong), mean parsed verbalized confidence and the
    share of replies with a parseable one, of one cell."""
    conf = sub["verbal_conf"].dropna()
    return {
        "n": float(len(sub)),
        "accuracy": float(sub["correct"].mean()) if len(sub) else math.nan,
        "verbal_conf": float(conf.mean()) if len(conf) else math.nan,
        "verbal_parsed": len(conf) / len(sub) if len(sub) else math.nan,
    }


def wording_table(data: RunData, task: str) -> pd.DataFrame:
    """Per model, condition (clean, each level of each arm), level and verbalized wording, on
    the model's matched scenes (module docstring): ``n_scenes`` (matched), ``n`` (items),
    ``accuracy``, ``verbal_conf`` (mean over the parseable replies) and ``verbal_parsed``;
    ``x`` is the level in metres (0 for clean). Empty without a verbalized wording."""
    rec = data.records[(data.records["task"] == task) & data.records["wording"].map(is_verbal)]
    rows: list[dict[str, object]] = []
    for model in data.models:
        mine = rec[rec["model"] == model]
        wordings = [w for w in data.wordings(task) if w in set(mine["wording"])]
        matched = _matched_scenes(mine, wordings)
        mine = mine[mine["scene"].astype(str).isin(matched)]
        cells = [("clean", 0.0)] + [(arm, v) for arm, lv in data.levels.items() for v in lv]
        for condition, x in cells:
            here = mine[mine["condition"] == condition]
            if condition != "clean":
                here = here[here["level_m"] == x]
            level = "clean" if condition == "clean" else level_label(x)
            for wording in wordings:
                sub = here[here["wording"] == wording]
                if sub.empty:
                    continue
                head = {"model": model, "condition": condition, "x": x, "level": level}
                rows.append(head | {"wording": wording, "n_scenes": len(matched)} | _row(sub))
    return pd.DataFrame(rows, columns=list(WORDING_COLUMNS))


def main_wording_records(records: pd.DataFrame) -> pd.DataFrame:
    """The records of models only (no person's) in each model's main wording — its first
    letter wording (:func:`~clearsight.sweep.results.primary_wording`: the reason-naming one
    first), else its first verbalized one: the population the paper's pooled accuracy numbers
    (the dynamic ranges of §IV-E, "pooled across models and tasks") describe, one reply per
    item and model rather than one per wording asked."""
    if records.empty:
        return records
    keep = pd.Series(False, index=records.index)
    for model, mine in records.groupby("model", sort=False):
        if is_person(str(model)):
            continue
        asked = sorted(set(mine["wording"].astype(str)))
        main = primary_wording(asked, verbal=False) or primary_wording(asked, verbal=True)
        keep[mine.index[mine["wording"] == main]] = True
    return records[keep]
