"""A person as one more observer of the visibility sweep: their items, order, records, images.

A person answers the same boxed-object questions a model of the run was asked, on the same
pixels, and each answer is stored as that question's sweep item with ``model =
"human:<name>"`` (no model options): the spec's other fields — scene, target, box, condition,
level, question with its answer key, physics, seed — are the model's, so the key recipe, the
store and :mod:`clearsight.report` treat the person like any model. The web page that asks the
questions is ``clearsight serve RUN --sweep`` (:mod:`clearsight.ui.sweep`).

* **Items** (:func:`human_items`): the run's planned questions (its stored config planned
  again, no model called) in one wording — by default the run's main letter wording
  (:func:`human_wording`) — once each, whatever model they were planned for.
* **Order** (:func:`session_order`): a seeded permutation of those items, a pure function of
  the items, the seed and the person's name, so levels, arms, controls and scenes come
  interleaved, every prefix is a random sample of the whole design, and a person who comes
  back meets the same order and carries on where they stopped.
* **Read-outs** (:func:`human_readouts`): the columns :func:`~clearsight.sweep.readouts.
  sweep_readouts` gives — answer, correct, abstained, chance, number of options, the slider's
  verbalized confidence in [0, 1] — with no internal confidence (a person has no letter
  probabilities: None, NaN in the report).
* **Images** (:func:`item_png`): the item's degraded image with its red box, rendered on
  request by the sweep's own renderer as PNG bytes without metadata (nothing in the file but
  pixels).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Final

from clearsight.seeding import rng_for
from clearsight.specs import Options
from clearsight.store import Record
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.readouts import SweepReadouts
from clearsight.sweep.results import HUMAN_PREFIX, primary_wording
from clearsight.sweep.specs import SweepItem
from clearsight.tasks import Question
from clearsight.validate import InputError

__all__ = [
    "HUMAN_PREFIX",
    "NAME_PATTERN",
    "human_items",
    "human_model",
    "human_readouts",
    "human_record",
    "human_wording",
    "item_png",
    "session_order",
]

#: A person's name: 1-40 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit.
NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


def human_model(name: str) -> str:
    """The model name of person ``name`` (``human:<name>``); InputError for a bad name."""
    if not NAME_PATTERN.fullmatch(name):
        raise InputError(
            "a name is 1-40 letters, digits, '.', '_' or '-', starting with a letter or "
            f"digit; got {name!r}"
        )
    return f"{HUMAN_PREFIX}{name}"


def human_wording(config: SweepConfig, wording: str | None = None) -> str:
    """The wording whose questions a person answers: ``wording`` if the run asks it, else the
    run's main letter wording (the one the report's headline accuracy and abstain columns
    read), else its main verbalized one."""
    if wording is not None:
        if wording not in config.wordings:
            raise InputError(
                f"the run asks no {wording!r} questions; its wordings: {', '.join(config.wordings)}"
            )
        return wording
    chosen = primary_wording(list(config.wordings), verbal=False) or primary_wording(
        list(config.wordings), verbal=True
    )
    if chosen is None:
        raise InputError("the run's config names no wording to ask")
    return chosen


def human_items(questions: Iterable[SweepItem], name: str, wording: str) -> list[SweepItem]:
    """The items person ``name`` answers: each question of ``wording`` once (a question planned
    for several models once), as ``human:<name>``'s item without model options, in key order."""
    model = human_model(name)
    none = Options({})
    items = {
        item.key: item
        for item in (
            replace(q, model=model, model_options=none) for q in questions if q.wording == wording
        )
    }
    return [items[key] for key in sorted(items)]


def session_order(items: Sequence[SweepItem], seed: int, name: str) -> list[SweepItem]:
    """``items`` in person ``name``'s order: a permutation seeded from the run seed and the
    name, independent of the order ``items`` come in (they are put in key order first)."""
    canonical = sorted(items, key=lambda item: item.key)
    perm = rng_for("sweep.human.order", seed, name).permutation(len(canonical))
    return [canonical[int(i)] for i in perm]


def human_readouts(q: Question, letter: str, confidence: float) -> SweepReadouts:
    """The read-outs of a person's answer ``letter`` (an option letter of ``q``, the abstain
    letter included) given with ``confidence`` in [0, 1]: the columns of
    :func:`~clearsight.sweep.readouts.sweep_readouts`, internal confidence None."""
    if letter not in q.letters:
        raise InputError(f"answer one of the options {', '.join(q.letters)}; got {letter!r}")
    if not 0.0 <= confidence <= 1.0:
        raise InputError(f"the confidence must lie in [0, 1], got {confidence!r}")
    return {
        "chance": q.chance,
        "n_options": len(q.answer_letters),
        "answer": letter,
        "internal_conf": None,
        "verbal_conf": confidence,
        "verbal_parsed": True,
        "letter_mass": None,
        "abstained": letter == q.abstain,
        "correct": letter == q.correct,
    }


def human_record(item: SweepItem, letter: str, confidence: float, elapsed_s: float) -> Record:
    """The ok record of a person's answer to ``item``: the raw output is what they gave (the
    letter and the slider's confidence), the read-outs :func:`human_readouts`."""
    readouts = human_readouts(item.question, letter, confidence)
    raw = {"source": "clearsight serve --sweep", "letter": letter, "confidence": confidence}
    return Record(item.key, "ok", None, raw, readouts, max(0.0, elapsed_s))


def item_png(item: SweepItem, depth_model: str) -> bytes:
    """The image the sweep shows a model for ``item`` (its condition rendered from the scene,
    the target's red box drawn last) as PNG bytes with no metadata chunk."""
    from clearsight.faces.sample import png_bytes
    from clearsight.sweep.unit import item_image

    return png_bytes(item_image(item, depth_model))
