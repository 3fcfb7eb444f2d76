"""Calibration-method read-outs (paper §5, Table 2; App. C.1) as data-driven plug-ins.

A read-out is how a calibration method turns a trajectory into a confidence. Each is described in
``data/readouts.yaml``: one or more *slots*, each a text (``tail``) put after the trajectory's
vision and reasoning lines in place of the template's answer and confidence lines, an optional
system turn, and the candidate strings scored at the end of the tail (in one forward pass each, by
:func:`clearsight.grounding.confidence.elicit.elicit`) with the confidence each stands for. Every
slot gives a distribution over its candidates (stored raw, with the mass on them) and its expected
confidence ``c_s = sum_k p_k values[k]``; the read-out's ``aggregate`` combines them:

* ``verbalize`` — the holistic 0-10 confidence of the template (one slot, ``c = E``).
* ``ptrue`` — P(True) (Kadavath et al. 2022): ``c = p(" True") / (p(" True") + p(" False"))``
  after the trajectory and its proposed answer.
* ``steerconf`` — SteerConf (Zhou et al. 2025): the same slot under five steering system
  prompts, very cautious ... very confident, with confidences ``c_1..c_5``; the method's
  aggregate is ``c = kappa_ans * kappa_conf * mu`` with ``mu = mean(c_i)``,
  ``kappa_conf = 1 / (1 + sigma / mu)`` (``sigma`` the population SD of the ``c_i``) and
  ``kappa_ans`` the share of steered answers that agree with the majority. The trajectory's
  answer is given, the same under every prompt, so ``kappa_ans = 1`` here (``c = 0`` when
  ``mu = 0``).
* ``conftuner`` — ConfTuner (Li et al. 2025): its native 0-9 distribution, ``c = sum_k p_k
  k/9``; its **coverage** is the share of probability mass on the ten numerals (the slot's raw
  mass).
* ``rlcr`` — RLCR (Damani et al. 2025): answer-then-confidence tags, ``<answer>..</answer>``
  then ``<confidence>``, the confidence a probability read as the 11 decimals 0, 0.1, ..., 0.9,
  1 (whole sequences: "0" times p(end | "0"), so "0.7" is not counted as "0").
* ``vlcal`` — VL-Calibration: separate visual and reasoning confidences ``v``, ``r`` (two
  slots), combined by their harmonic mean ``c = 2 v r / (v + r)`` (0 when ``v + r = 0``).

Methods that the paper ran with their own fine-tuned checkpoints (ConfTuner, RLCR,
VL-Calibration) work here with any model; ``checkpoint`` in the data file says which one the
paper used. The divergence of two read-outs of a multi-slot method is the mean over its slots
of the per-slot JSDs (App. A.1.4 averages VL-Calibration's vision and reasoning divergences;
SteerConf's five prompts likewise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any

import yaml

from clearsight.grounding.confidence.elicit import Elicited, ElicitFailure, ElicitRequest
from clearsight.grounding.confidence.numerals import NUMERALS
from clearsight.grounding.trajectories.trajectory import (
    Template,
    Trajectory,
    default_template,
    user_message,
)
from clearsight.grounding.trajectories.written import WrittenTrajectory
from clearsight.models.base import Message, TextPart
from clearsight.seeding import content_hash
from clearsight.validate import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from clearsight.grounding.readouts import ElicitReadouts
from clearsight.grounding.problems.problem import Problem

#: The read-out a run uses unless told otherwise (the template's own slot).
DEFAULT_READOUT = "verbalize"

#: Numeral scales a slot may name instead of listing candidates: strings and their values.
SCALES: dict[str, tuple[tuple[str, ...], tuple[float, ...]]] = {
    "0-10": (NUMERALS, tuple(k / 10 for k in range(11))),
    "0-9": (tuple(str(k) for k in range(10)), tuple(k / 9 for k in range(10))),
}

AGGREGATES = ("single", "steerconf", "harmonic")


@dataclass(frozen=True)
class Slot:
    """One request of a read-out: the text after the rationale, the system turn (None: none),
    the candidates scored at its end and the confidence of each."""

    name: str
    tail: str
    candidates: tuple[str, ...]
    values: tuple[float, ...]
    system: str | None = None


@dataclass(frozen=True)
class Readout:
    """A calibration method's read-out (``data/readouts.yaml``)."""

    name: str
    method: str
    checkpoint: str
    aggregate: str
    slots: tuple[Slot, ...]

    @property
    def hash(self) -> str:
        """Content hash recorded with every item scored by the read-out."""
        return content_hash(asdict(self))[:16]


def _slot(d: dict[str, Any], where: str) -> Slot:
    if "scale" in d:
        if d["scale"] not in SCALES:
            raise InputError(f"{where}: unknown scale {d['scale']!r} (known: {sorted(SCALES)})")
        cands, values = SCALES[d["scale"]]
    else:
        cands = tuple(str(c) for c in d["candidates"])
        values = tuple(float(v) for v in d["values"])
    if len(cands) != len(values) or len(cands) < 2:
        raise InputError(f"{where}: needs two or more candidates, each with a value")
    return Slot(str(d["name"]), str(d["tail"]), cands, values, d.get("system"))


def parse_readouts(text: str) -> dict[str, Readout]:
    """The read-outs of a YAML document (the format of ``data/readouts.yaml``)."""
    out = {}
    for name, d in yaml.safe_load(text)["readouts"].items():
        if d["aggregate"] not in AGGREGATES:
            raise InputError(f"read-out {name}: unknown aggregate {d['aggregate']!r}")
        slots = tuple(_slot(s, f"read-out {name}") for s in d["slots"])
        if d["aggregate"] == "harmonic" and len(slots) != 2:
            raise InputError(f"read-out {name}: the harmonic mean combines two slots")
        out[str(name)] = Readout(str(name), d["method"], d["checkpoint"], d["aggregate"], slots)
    return out


@lru_cache(maxsize=1)
def bundled_readouts() -> dict[str, Readout]:
    """The bundled read-outs by name."""
    text = files("clearsight.grounding").joinpath("data/readouts.yaml").read_text()
    return parse_readouts(text)


def get_readout(name: str) -> Readout:
    """The bundled read-out ``name``; InputError naming the known ones otherwise."""
    known = bundled_readouts()
    if name not in known:
        raise InputError(f"unknown read-out {name!r} (known: {', '.join(known)})")
    return known[name]


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------


def slot_messages(
    problem: Problem,
    trajectory: Trajectory,
    slot: Slot,
    image: npt.NDArray[np.uint8] | None = None,
    template: Template | None = None,
) -> tuple[tuple[Message, ...], dict[str, tuple[int, int]]]:
    """The conversation whose last turn is the trajectory's rationale then the slot's tail,
    and the segment spans within that turn (the answer's inside the tail where the tail quotes
    it). The rationale is laid out by ``template`` (default: the canonical one) up to its answer
    line; a trajectory kept as written
    (:class:`~clearsight.grounding.trajectories.trajectory.WrittenTrajectory`) is its text as
    written, answer included, followed by the tail's text after ``{answer}`` (a tail without
    ``{answer}`` on a new line). For ``verbalize`` either is :meth:`Trajectory.render`'s text,
    character for character."""
    t = template or default_template()
    text, spans = trajectory.render(t)
    before, _, after = slot.tail.partition("{answer}")
    if isinstance(trajectory, WrittenTrajectory):
        written = trajectory.text.rstrip()
        body = written + (after if "{answer}" in slot.tail else "\n" + slot.tail)
    else:
        head = text[: text.rfind("\n", 0, spans["answer"][0]) + 1]
        answer = trajectory.answer.strip()
        body = head + before + (answer + after if "{answer}" in slot.tail else "")
        spans = dict(spans)
        spans["answer"] = (len(head) + len(before), len(head) + len(before) + len(answer))
    turns = [user_message(problem, t, image), Message("assistant", (TextPart(body),))]
    if slot.system is not None:
        turns.insert(0, Message("system", (TextPart(slot.system),)))
    return tuple(turns), spans


def readout_requests(
    readout: Readout,
    problem: Problem,
    trajectory: Trajectory,
    share: float,
    seed: int,
    image: npt.NDArray[np.uint8] | None = None,
    template: Template | None = None,
) -> list[ElicitRequest]:
    """One request per slot, with share ``share`` of the rationale (vision and reasoning)
    tokens hidden from the slot (the same subset under every slot: one seed), laid out by
    ``template`` (:func:`slot_messages`)."""
    out = []
    for slot in readout.slots:
        messages, spans = slot_messages(problem, trajectory, slot, image, template)
        hide = tuple(spans[s] for s in ("vision", "reasoning") if spans[s][1] > spans[s][0])
        out.append(
            ElicitRequest(
                messages,
                hide=hide if share > 0 else (),
                share=share,
                seed=seed,
                candidates=slot.candidates,
                values=slot.values,
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# Aggregates
# --------------------------------------------------------------------------------------------


def steerconf_confidence(confidences: Sequence[float], answer_consistency: float = 1.0) -> float:
    """SteerConf's calibrated confidence ``kappa_ans * kappa_conf * mu`` of the steered
    confidences: ``mu`` their mean, ``kappa_conf = 1 / (1 + sigma / mu)`` with ``sigma`` their
    population SD, ``kappa_ans`` = ``answer_consistency`` (1 for a given trajectory); 0 when
    ``mu = 0``."""
    if not confidences:
        raise InputError("SteerConf needs at least one steered confidence")
    n = len(confidences)
    mu = sum(confidences) / n
    if mu <= 0:
        return 0.0
    sigma = (sum((c - mu) ** 2 for c in confidences) / n) ** 0.5
    return answer_consistency * mu / (1.0 + sigma / mu)


def harmonic_mean(a: float, b: float) -> float:
    """``2 a b / (a + b)``, 0 when ``a + b = 0`` (VL-Calibration's combined confidence)."""
    return 0.0 if a + b <= 0 else 2.0 * a * b / (a + b)


def aggregate(readout: Readout, confidences: Sequence[float]) -> float:
    """The read-out's confidence from its slots' expected confidences, in slot order."""
    if len(confidences) != len(readout.slots):
        raise InputError(f"{readout.name}: {len(confidences)} confidences for its slots")
    if readout.aggregate == "steerconf":
        return steerconf_confidence(confidences)
    if readout.aggregate == "harmonic":
        return harmonic_mean(confidences[0], confidences[1])
    return float(confidences[0])


@dataclass(frozen=True)
class ReadoutResult:
    """A read-out of one trajectory: its confidence, and per slot the distribution over the
    slot's candidates, the expected confidence and the raw mass on the candidates."""

    readout: str
    confidence: float
    distributions: dict[str, list[float]]
    confidences: dict[str, float]
    masses: dict[str, float]

    @property
    def coverage(self) -> float:
        """Mean share of probability mass on the candidates over the slots (ConfTuner's
        coverage for its one 0-9 slot)."""
        return sum(self.masses.values()) / len(self.masses)

    def to_readouts(self) -> ElicitReadouts:
        """The record's read-outs (``probs``/``mass`` of the first slot, as before)."""
        first = next(iter(self.distributions))
        return {
            "expected": self.confidence,
            "probs": self.distributions[first],
            "mass": self.masses[first],
            "readout": self.readout,
            "distributions": self.distributions,
            "confidences": self.confidences,
            "coverage": self.coverage,
        }


def combine(readout: Readout, results: Sequence[Elicited | ElicitFailure]) -> ReadoutResult | str:
    """The read-out of one trajectory from its slots' elicitations; the failure reason (never a
    guessed value) when a slot failed or put no mass on its candidates."""
    for slot, r in zip(readout.slots, results, strict=True):
        if isinstance(r, ElicitFailure):
            return f"skipped: {readout.name} slot {slot.name}: {r.reason}"
        if r.probs is None or r.expected is None:
            return f"{readout.name} slot {slot.name}: no probability mass on any candidate"
    ok = [r for r in results if isinstance(r, Elicited)]
    names = [s.name for s in readout.slots]
    conf = [float(r.expected or 0.0) for r in ok]
    return ReadoutResult(
        readout.name,
        aggregate(readout, conf),
        {n: list(r.probs or ()) for n, r in zip(names, ok, strict=True)},
        dict(zip(names, conf, strict=True)),
        {n: r.mass for n, r in zip(names, ok, strict=True)},
    )


__all__ = [
    "DEFAULT_READOUT",
    "Readout",
    "ReadoutResult",
    "Slot",
    "aggregate",
    "bundled_readouts",
    "combine",
    "get_readout",
    "harmonic_mean",
    "parse_readouts",
    "readout_requests",
    "slot_messages",
    "steerconf_confidence",
]
