"""The probe on a card: its section (:func:`card_section`: accuracy and cross-run ECE with
question-bootstrap intervals) and its part of a card run (:func:`card_plan`,
:func:`card_run`): an image model that answers a free question about an image is the sensor
answering directly; a text-only model is the reasoner asking the card's sensor."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from clearsight.faces.card import CardSection, Number, ci_number, number_bars
from clearsight.faces.card_run import CardConfig, Part, serial
from clearsight.store import run_cost, spec_model

if TYPE_CHECKING:
    from clearsight.driver import RunOptions, RunSummary
    from clearsight.probe.config import ProbeConfig

__all__ = ["SENSOR_ROLE", "card_plan", "card_run", "card_section", "probe_numbers"]


def probe_numbers(run_dir: Path, n_boot: int, seed: int) -> tuple[Number, ...]:
    """The card's probe accuracy and cross-run ECE of the run in ``run_dir``, with their
    question-bootstrap intervals (:func:`~clearsight.probe.analysis.probe_intervals`)."""
    from clearsight.probe.analysis import probe_intervals
    from clearsight.probe.results import load_probe_results

    found = probe_intervals(load_probe_results(run_dir).transcripts, n_boot, seed)
    if found is None:
        return ()
    acc, ece = found.accuracy, found.cross_run_ece
    numbers = [ci_number("probe accuracy", acc.estimate, acc.low, acc.high, found.n, 2)]
    if ece is not None:
        numbers.append(
            ci_number("probe cross-run ECE", ece.estimate, ece.low, ece.high, found.questions)
        )
    return tuple(numbers)


def card_section(run_dir: Path, n_boot: int, seed: int) -> CardSection:
    """The probe's section of a card: its numbers, the sensor's cost, a bar figure of the
    numbers, and the run's report written with the card's appendix."""
    from clearsight.probe.page.report import build_probe_report

    numbers = probe_numbers(run_dir, n_boot, seed)
    return CardSection(
        "probe",
        numbers=numbers,
        cost=run_cost(run_dir, spec_model("sensor")),
        figure=number_bars(numbers, "probe accuracy and cross-run ECE"),
        write_report=lambda appendix: build_probe_report(run_dir, (), appendix),
    )


#: The probe role of an image model on a card: the sensor, answering the questions itself.
SENSOR_ROLE = "sensor answering directly (strategy direct)"


def _card_config(config: CardConfig, model: str, sensor: bool) -> ProbeConfig:
    """The card's probe with ``model`` as the sensor answering directly (``sensor``), or as
    the text-only reasoner asking the card's sensor."""
    from clearsight.probe.config import ProbeConfig

    common = {"instance_ids": config.probe_questions, "runs": config.probe_runs}
    common |= {"seed": config.seed, "judge": "exact"}
    if sensor:
        return ProbeConfig.model_validate(
            {"sensor": model, "strategies": ("direct",), "k": 1, **common}
        )
    return ProbeConfig.model_validate(
        {
            "sensor": config.probe_sensor,
            "reasoners": (model,),
            "strategies": (config.probe_strategy,),
            "k": config.probe_k,
            "budget": config.probe_budget,
            "max_new_tokens": config.probe_max_new_tokens,
            **common,
        }
    )


def card_plan(model: str, config: CardConfig) -> list[Part]:
    """An image model that answers a free question about an image is the sensor answering
    directly; a text-only model is the reasoner asking the card's sensor."""
    from clearsight.card.parts import check_needs, missing_model
    from clearsight.models import shared_backend
    from clearsight.probe.protocol import PROBE

    if shared_backend(model).capabilities.images:
        problem = _free_question_problem(model, config)
        if problem is not None:
            return [Part("probe", False, note=f"cannot be the probe's sensor: {problem}")]
        return [Part("probe", True, SENSOR_ROLE)]
    sensor = config.probe_sensor
    if (why := missing_model(sensor)) is not None:
        return [Part("probe", False, note=f"the sensor {sensor} {why}")]
    skipped = check_needs(PROBE.models(_card_config(config, model, sensor=False)), "probe")
    reasoner = f"text-only reasoner ({config.probe_strategy}) asking {sensor}"
    return [skipped or Part("probe", True, reasoner)]


def _free_question_problem(model: str, config: CardConfig) -> str | None:
    """Ask ``model`` one short free question about the first probe question's photo; the
    problem as one line, or None when it answered."""
    from clearsight.probe.instances import bundled_instances
    from clearsight.probe.sensor import Sensor
    from clearsight.validate import InputError

    by_id = {i.id: i for i in bundled_instances()}
    present = [by_id[q] for q in config.probe_questions if q in by_id]
    if not present:
        return "none of the card's probe photos is on this machine"
    try:
        Sensor(model, k=1, judge="exact").sample(
            present[0], "What is in the image?", 1, config.seed, max_new_tokens=8
        )
    except (InputError, RuntimeError) as exc:
        return str(exc)
    return None


def card_run(
    model: str, config: CardConfig, parts: Sequence[Part], run_dir: Path, options: RunOptions
) -> RunSummary:
    """Run the card's probe for ``model`` in its planned role (``parts``) into ``run_dir``."""
    from clearsight.probe.protocol import run_probe

    sensor = any(p.name == "probe" and p.role == SENSOR_ROLE for p in parts)
    return run_probe(_card_config(config, model, sensor), run_dir, **serial(options))
