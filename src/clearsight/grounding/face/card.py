"""Trajectory grounding on a card: its section (:func:`grounding_card`, the numbers of
:func:`grounding_numbers`) and its card run (:data:`GROUNDING_CARD_RUN`).

* **section**: TGS-self and TGS-pair per axis, overall, with the two-stage bootstrap of
  :func:`~clearsight.grounding.analysis.analyse_grounding`.
* **run**: the card's model on the card's bundled problems, TGS-Bench pairs from the rule edits
  only (no generator model), without variation and hesitation, where the model scores
  candidates under a custom attention mask (TGS-self hides the trajectory's spans).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from clearsight.faces.card import CardSection, Number, ci_number, number_bars
from clearsight.faces.card_run import CardConfig, CardRun, Part, serial

if TYPE_CHECKING:
    from clearsight.driver import RunOptions, RunSummary
    from clearsight.grounding import GroundingConfig
    from clearsight.grounding.analysis import GroundingAnalysis

__all__ = ["GROUNDING_CARD_RUN", "TGS_KEYS", "grounding_card", "grounding_numbers"]

#: Grounding scores on the card: (key of the grounding analysis, page label).
TGS_KEYS: tuple[tuple[str, str], ...] = (
    ("tgs_self", "TGS-self"),
    ("tgs_pair_vision", "TGS-pair vision"),
    ("tgs_pair_reasoning", "TGS-pair reasoning"),
    ("tgs_pair_answer", "TGS-pair answer"),
)


def grounding_numbers(analysis: GroundingAnalysis) -> tuple[Number, ...]:
    """TGS-self and TGS-pair per axis of a grounding analysis (overall scores)."""
    numbers = []
    for key, label in TGS_KEYS:
        score = analysis.overall.get(key)
        if score is not None:
            i = score.interval
            numbers.append(ci_number(label, i.estimate, i.low, i.high, score.n_items))
    return tuple(numbers)


def grounding_card(run_dir: Path, n_boot: int, seed: int) -> CardSection:
    from clearsight.grounding.analysis import analyse_grounding
    from clearsight.grounding.page.report import render_grounding_report

    analysis = analyse_grounding(run_dir, n_boot=n_boot, seed=seed)
    numbers = grounding_numbers(analysis)
    return CardSection(
        "trajectory grounding (TGS)",
        numbers=numbers,
        cost=analysis.cost,
        figure=number_bars(numbers, "TGS with 95 % intervals"),
        write_report=lambda appendix: render_grounding_report(analysis, run_dir, appendix),
    )


def _card_config(config: CardConfig, model: str) -> GroundingConfig:
    """The card's trajectory grounding of ``model`` (module docstring)."""
    from clearsight.grounding import GroundingConfig

    return GroundingConfig(
        model=model,
        model_options={},  # the backend's own defaults (not every backend takes batch_size)
        generator=None,
        n_problems=config.grounding_problems,
        max_new_tokens=config.grounding_max_new_tokens,
        variation=False,
        hesitation=False,
        n_boot=config.n_boot,
        seed=config.seed,
    )


def _card_plan(model: str, config: CardConfig) -> list[Part]:
    """Trajectory grounding runs on a card where its configuration's models load with what it
    needs (candidate probabilities under a custom attention mask)."""
    from clearsight.card.parts import check_needs
    from clearsight.grounding.protocol import GROUNDING

    skipped = check_needs(GROUNDING.models(_card_config(config, model)), "grounding")
    return [skipped or Part("grounding", True, "the measured model")]


def _card_run(
    model: str, config: CardConfig, parts: Sequence[Part], run_dir: Path, options: RunOptions
) -> RunSummary:
    from clearsight.grounding.protocol import run_grounding

    return run_grounding(_card_config(config, model), run_dir, **serial(options))


#: Trajectory grounding's part in a card (module docstring).
GROUNDING_CARD_RUN = CardRun(_card_plan, _card_run)
