"""The sweep on a card: its section (:func:`sweep_card`, the numbers of
:func:`sweep_numbers`) and its card run (:data:`SWEEP_CARD_RUN`).

* **section**: per model of the run, per arm the accuracy crossing V*_acc of the letter
  wording, the blind-spot width W of each awareness signal (:data:`~clearsight.sweep.signals.
  AWARENESS`, each read in its headline wording, each with its censoring bound; the reference
  observer's abstention W under the generic wording with the reason it is not about 0), AURC
  of the internal confidence gating the answers and ECE of the internal and of the verbalized
  confidence, each pooled over clean and the arm's levels; the clean accuracy; and the same
  V*_acc and W of each ImageNet-C corruption placed on the metre axis (those with a metre
  grid, :mod:`clearsight.sweep.numbers.corruptions`).
* **run**: the card's scenes x arms (at its levels) x controls, t2 identification, both
  wordings (the verbalized one on the first ``verbal_scenes`` scenes), asked of the card's
  model and of each anchor this machine can run (the reference observer, the blind control).
* **board**: the letter wording's answers, paired across cards by scene, target, condition,
  level, wording and question, grouped as clean and each arm, clustered by source photo.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.faces.card import CardSection, Number, as_float, ci_number
from clearsight.faces.card_run import BLIND_CONTROL, OBSERVER, CardConfig, CardRun, Part
from clearsight.sweep.results import is_verbal
from clearsight.sweep.signals import AWARENESS

if TYPE_CHECKING:
    from clearsight.driver import RunOptions, RunSummary
    from clearsight.sweep.analysis import SweepAnalysis
    from clearsight.sweep.config import SweepConfig

__all__ = ["SWEEP_CARD_RUN", "card_sweep_config", "sweep_card", "sweep_numbers"]


def _w_signals() -> tuple[tuple[str, str, bool], ...]:
    """The W numbers of the sweep on the card: (page label, signal, read in the letter wording
    or not), one per awareness signal (:data:`~clearsight.sweep.signals.AWARENESS`), the label
    the first word of the signal's own (``internal confidence`` -> ``fog W internal``), so a
    signal added there reaches the card."""
    return tuple((s.label.split()[0], s.name, s.headline_wording == "letter") for s in AWARENESS)


#: The board's groups of paired items, in its order: the clean images, then each arm pooled
#: over its levels.
_BOARD_GROUPS = ("clean", "fog", "water")
#: Columns that make two sweep records the same item on a board (the model aside).
_ITEM = (
    "scene",
    "target",
    "task",
    "wording",
    "condition",
    "level",
    "question.correct",
    "question.options",
)


def _crossing_number(key: str, row: Any, levels: tuple[float, ...]) -> Number:
    """V* of a crossings row, shown as the report shows it ('≤ 1.95 m [1.95, 2.63] m')."""
    from clearsight.sweep.page.labels import crossing_label, interval_m, with_interval

    v, lo, hi = as_float(row["v_star_m"]), as_float(row["v_low_m"]), as_float(row["v_high_m"])
    censored = str(row["censored"] or "")
    text = with_interval(crossing_label(v, censored, levels), interval_m(lo, hi))
    return Number(key, v, lo, hi, text, censored, int(row["n_items"]))


def _w_number(key: str, row: Any) -> Number:
    """W of a crossings row with its bound, shown as the report shows it ('≥ +0.79 [...]'),
    and the reason beside it where the reference observer's W is not about 0 by design."""
    from clearsight.sweep.page.labels import interval, observer_note, w_label, with_interval

    w, lo, hi = as_float(row["w"]), as_float(row["w_low"]), as_float(row["w_high"])
    bound = str(row["w_bound"] or "")
    reason = observer_note(str(row["model"]), str(row["wording"]), str(row["signal"]))
    label = w_label(w, bound) or "n/a"
    shown = (with_interval(label, interval(lo, hi)), f"({reason})" if reason else "")
    return Number(key, w, lo, hi, " ".join(s for s in shown if s), bound, int(row["n_items"]))


def _pooled(table: pd.DataFrame, model: str, arm: str, wording: str | None) -> Any:
    """The pooled (clean + every level of ``arm``) row of a confidence table, or None."""
    if table.empty or wording is None:
        return None
    hit = table[
        (table["model"] == model)
        & (table["arm"] == arm)
        & (table["wording"] == wording)
        & (table["level"] == "pooled")
    ]
    return hit.iloc[0] if len(hit) else None


def _confidence_numbers(
    analysis: SweepAnalysis, model: str, arm: str, letter: str | None, verbal: str | None
) -> list[Number]:
    """AURC of the internal confidence and ECE of the internal and verbalized confidence,
    pooled over clean and the arm's levels, as the report's tables give them."""
    identify = analysis.tasks.get("identify")
    if identify is None:
        return []
    numbers = []
    if (p := _pooled(identify.selective, model, arm, letter)) is not None:
        numbers.append(ci_number(f"{arm} AURC", p.aurc, p.aurc_low, p.aurc_high, int(p.n_scored)))
    for label, wording in (("internal", letter), ("verbalized", verbal)):
        if (c := _pooled(identify.calibration, model, arm, wording)) is not None:
            key = f"{arm} ECE {label}"
            numbers.append(ci_number(key, c.ece, c.ece_low, c.ece_high, int(c.n_scored)))
    return numbers


def _arm_numbers(
    arm: str, rows: pd.DataFrame, levels: tuple[float, ...], letter: str | None, verbal: str | None
) -> list[Number]:
    """V*_acc and the three W of one model and arm (those the run has rows for)."""

    def row(wording: str | None, signal: str) -> Any:
        hit = rows[(rows["wording"] == wording) & (rows["signal"] == signal)]
        return hit.iloc[0] if len(hit) else None

    numbers = []
    if (acc := row(letter, "accuracy")) is not None:
        numbers.append(_crossing_number(f"{arm} V*_acc", acc, levels))
    for label, signal, on_letter in _w_signals():
        if (r := row(letter if on_letter else verbal, signal)) is not None:
            numbers.append(_w_number(f"{arm} W {label}", r))
    return numbers


def sweep_numbers(analysis: SweepAnalysis) -> dict[str, list[Number]]:
    """Per model of the sweep run: its card numbers (module docstring), in page order."""
    data = analysis.data
    wordings = data.wordings("identify")
    letter = next((w for w in wordings if not is_verbal(w)), None)
    verbal = next((w for w in wordings if is_verbal(w)), None)
    cr, curves = analysis.crossings, analysis.curves
    out: dict[str, list[Number]] = {}
    for model in data.models:
        numbers: list[Number] = []
        clean = curves[
            (curves["model"] == model)
            & (curves["wording"] == letter)
            & (curves["signal"] == "accuracy")
            & (curves["condition"] == "clean")
        ]
        if len(clean):
            c = clean.iloc[0]
            numbers.append(ci_number("clean accuracy", c.estimate, c.low, c.high, int(c.n), 2))
        for arm in data.arms:
            rows = cr[(cr["model"] == model) & (cr["arm"] == arm)]
            numbers += _arm_numbers(arm, rows, data.levels[arm], letter, verbal)
            numbers += _confidence_numbers(analysis, model, arm, letter, verbal)
        numbers += _corruption_numbers(analysis, model, letter, verbal)
        out[model] = numbers
    return out


def _corruption_numbers(
    analysis: SweepAnalysis, model: str, letter: str | None, verbal: str | None
) -> list[Number]:
    """V*_acc and the W of each ImageNet-C corruption with a metre grid
    (:mod:`clearsight.sweep.numbers.corruptions`), keyed ``ImageNet-C <name>``."""
    crossings = analysis.corruptions.crossings
    numbers: list[Number] = []
    for name, (levels, _) in analysis.corruptions.grids.items():
        if levels:
            rows = crossings[(crossings["model"] == model) & (crossings["arm"] == name)]
            numbers += _arm_numbers(f"ImageNet-C {name}", rows, levels, letter, verbal)
    return numbers


def sweep_card(run_dir: Path, n_boot: int, seed: int) -> CardSection:
    """The sweep's card section: every model's numbers, the accuracy curves of the letter
    wording and the report written from the same analysis (no example images)."""
    from clearsight.sweep.analysis import analyse_sweep
    from clearsight.sweep.page.accuracy import accuracy_panels
    from clearsight.sweep.page.report import write_sweep_report

    analysis = analyse_sweep(run_dir, n_boot=n_boot, seed=seed)
    wordings = analysis.data.wordings("identify")
    letter = next((w for w in wordings if not is_verbal(w)), wordings[0] if wordings else "")
    return CardSection(
        "accuracy against visibility",
        by_model={m: tuple(v) for m, v in sweep_numbers(analysis).items()},
        cost=analysis.cost,
        figure=accuracy_panels(analysis.curves, letter, analysis.data.arms),
        write_report=lambda appendix: write_sweep_report(analysis, run_dir, appendix),
    )


# -------------------------------------------------------------------------------- card run


def card_sweep_config(config: CardConfig, models: tuple[str, ...]) -> SweepConfig:
    """The card's sweep of ``models`` (module docstring); an InputError for sizes the sweep
    does not take (a control or wording it does not know)."""
    from pydantic import ValidationError

    from clearsight.sweep.config import SweepConfig
    from clearsight.validate import invalid_options

    verbal = {w: config.verbal_scenes for w in config.wordings if is_verbal(w)}
    fields = {
        "scene_ids": config.scene_ids,
        "arms": config.arms,
        "levels_m": config.levels_m,
        "controls": config.controls,
        "tasks": ("identify",),
        "wordings": config.wordings,
        "wording_scenes": verbal,
        "models": models,
        "seed": config.seed,
    }
    try:
        return SweepConfig.model_validate(fields)
    except ValidationError as exc:
        raise invalid_options(exc, "card config") from None


def _plan(model: str, config: CardConfig) -> list[Part]:
    """The sweep (it always runs: the card's model loads), then each anchor: asked beside the
    model, or skipped with its reason."""
    from clearsight.card.parts import missing_model

    card_sweep_config(config, (model,))  # sizes the sweep refuses: said before anything runs
    parts = [Part("sweep", True, "the card's model, with the anchors below")]
    for anchor in config.anchors:
        if anchor == model:
            continue
        why = missing_model(anchor)
        role = "reference observer" if anchor == OBSERVER else "blind control"
        parts.append(Part(f"anchor {anchor}", why is None, role, why or ""))
    return parts


def _run(
    model: str, config: CardConfig, parts: Sequence[Part], run_dir: Path, options: RunOptions
) -> RunSummary:
    """The card's sweep of the model and the anchors that run, in ``options``' workers."""
    from clearsight.sweep.protocol import run_sweep

    anchors = [p for p in parts if p.name.startswith("anchor ")]
    ran = tuple(p.name.removeprefix("anchor ") for p in anchors if p.runs)
    models = config.sweep_models(model, ran)
    if BLIND_CONTROL in models:
        from clearsight.models.embedded import smollm2_dir

        smollm2_dir()  # convert the GGUF once here, not in every worker
    return run_sweep(card_sweep_config(config, models), run_dir, **options)


def _board(run_dir: Path, model: str) -> pd.DataFrame:
    """The card model's letter-wording answers as a board pairs them (module docstring)."""
    from clearsight.sweep.results import load_run_data

    rec = load_run_data(run_dir).records
    rec = rec[(rec["model"] == model) & ~rec["wording"].map(is_verbal)].copy()
    rec["level"] = rec["level_m"].fillna(-1.0)
    rec["item"] = [json.dumps(row) for row in rec[list(_ITEM)].astype(str).to_numpy().tolist()]
    groups = [rec[rec["condition"] == group].assign(group=group) for group in _BOARD_GROUPS]
    return pd.concat([g[["item", "group", "cluster", "correct"]] for g in groups])


#: The sweep's part in a card (module docstring).
SWEEP_CARD_RUN = CardRun(_plan, _run, _board)
