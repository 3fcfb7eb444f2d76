"""Read-outs derived again from the stored raw outputs, with today's code and no model.

Every record keeps the backend's raw output, so its read-outs can be computed again: the check
to run after upgrading clearsight (did the parsing change a number?) and the one that catches a
store edited by hand. :func:`rederive` reads each ``ok`` record of a kind it knows how to read
(:data:`DERIVED`), each by its protocol's own code, and a re-ask of one (on the stored spec of
the record it repeats), and lists the records whose stored read-outs differ from the derived
ones (numbers equal within :data:`TOLERANCE`; any other value exactly):

* a sweep answer: :func:`clearsight.sweep.readouts.sweep_readouts` on its question;
* a grounding trajectory: its text parsed again
  (:func:`clearsight.grounding.unit.trajectory_readouts`: trajectory, answer, correct, written
  confidence; whether its answer was forced is not in the text and is taken as stored);
* a grounding elicitation: each slot's distribution, mass and expected confidence from its
  stored per-candidate probabilities
  (:func:`clearsight.grounding.confidence.numerals.numeral_distribution`), combined by its read-out
  (:func:`clearsight.grounding.confidence.methods.combine`);
* a grounding judgement: :func:`clearsight.grounding.bench.pairs.judge_p_bad` on the judge's stored
  candidate probabilities;
* a probe transcript: a direct answer's letter parsed again from the sensor's text
  (:func:`clearsight.probe.reasoner.parsing.parse_letter`), a conversation's commit from its last
  turn's text (:func:`clearsight.probe.reasoner.parsing.parse_action`), then the summary
  (:meth:`clearsight.probe.transcript.Transcript.readouts`). Earlier turns' queries are not
  parsed again: each query was answered by the sensor as it was parsed then.

Records of other kinds (grounding edits and sampled variations, the probe's belief and build
records) are counted, not read.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearsight.store import RunStore
from clearsight.tasks import Question
from clearsight.tasks.question import TemplateRef
from clearsight.verify.specs import VERIFY_KIND

if TYPE_CHECKING:
    from clearsight.probe.transcript import Transcript

__all__ = ["DERIVED", "TOLERANCE", "Rederived", "question_of", "rederive", "same_value"]

#: Two numbers of read-outs derived by the same code from the same raw output are equal within
#: this (absolute); a number stored as JSON keeps every bit of a float64, so this only forgives
#: the last bits.
TOLERANCE = 1e-12

#: A record's stored spec, raw output and stored read-outs -> its read-outs derived again.
Derive = Callable[[Mapping[str, Any], Any, Mapping[str, Any]], Mapping[str, Any]]


def question_of(stored: Mapping[str, Any]) -> Question:
    """A sweep question from its stored form (what :meth:`Question.to_json` wrote)."""
    fields = dict(stored)
    for name in ("question_template", "instruction_template", "abstain_template"):
        ref = fields.get(name)
        fields[name] = None if ref is None else TemplateRef(ref["id"], ref["sha256"])
    fields["letters"], fields["options"] = tuple(fields["letters"]), tuple(fields["options"])
    return Question(**fields)


@lru_cache(maxsize=4096)
def _question(stored: str) -> Question:
    return question_of(json.loads(stored))


def same_value(a: Any, b: Any, tolerance: float = TOLERANCE) -> bool:
    """Whether two JSON values are equal: numbers within ``tolerance`` (NaN equals NaN), a
    bool only to a bool, mappings key by key, lists item by item, anything else exactly."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (type(a) is type(b) and a == b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= tolerance
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        pairs = zip(a, b, strict=False)
        return len(a) == len(b) and all(same_value(x, y, tolerance) for x, y in pairs)
    return bool(a == b)


# ------------------------------------------------------------------------------ per kind


def _sweep(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.sweep.readouts import sweep_readouts

    return sweep_readouts(_question(json.dumps(spec["question"], sort_keys=True)), raw)


def _trajectory(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.grounding.specs import TemplateRef as GroundingTemplate
    from clearsight.grounding.specs import TrajectorySpec
    from clearsight.grounding.unit import trajectory_readouts
    from clearsight.validate import InputError
    from clearsight.verify.kinds import problem_of

    item = TrajectorySpec(
        problem=problem_of(spec["problem"]),
        model=spec["model"],
        model_options=dict(spec["model_options"]),
        template=GroundingTemplate(**spec["template"]),
        max_new_tokens=spec["max_new_tokens"],
        given=spec.get("given"),
    )
    try:
        return trajectory_readouts(item, raw["text"], bool(stored.get("answer_forced")))
    except InputError as exc:
        return {"unreadable": str(exc)}


def _elicit(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.grounding.confidence.elicit import Elicited
    from clearsight.grounding.confidence.methods import DEFAULT_READOUT, combine, get_readout
    from clearsight.grounding.confidence.numerals import numeral_distribution

    readout = get_readout((spec.get("readout") or {}).get("name", DEFAULT_READOUT))
    elicited = []
    for slot, got in zip(readout.slots, raw.get("slots", [raw]), strict=True):
        # the stored per-candidate probabilities already carry p(end | candidate)
        probs = dict(zip(slot.candidates, got["raw"], strict=True))
        ends = dict.fromkeys(slot.candidates, 1.0)
        r = numeral_distribution(probs, ends, slot.candidates, slot.values)
        tokens = (got["hidden_tokens"], got["prompt_tokens"])
        elicited.append(Elicited(r.raw, r.mass, r.probs, r.expected, (), *tokens))
    result = combine(readout, elicited)
    return {"unreadable": result} if isinstance(result, str) else result.to_readouts()


def _judge(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.grounding.bench.pairs import judge_p_bad

    p_bad = judge_p_bad(raw.get("candidate_probs") or {}, spec["bad_first"])
    if p_bad is None:
        return {"unreadable": "the judge put no probability on 1 or 2"}
    return {"p_bad": p_bad, "picked_bad": p_bad > 0.5, "axis": spec["axis"]}


def _probe(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.probe.instances import Instance
    from clearsight.probe.transcript import Transcript

    transcript = Transcript.from_json(raw)
    if "instance" in spec and transcript.turns:
        letters = Instance.from_json(spec["instance"]).letters
        transcript = _committed_again(transcript, letters)
    return dict(transcript.readouts())


def _committed_again(t: Transcript, letters: tuple[str, ...]) -> Transcript:
    """``t`` with the letter of its last turn parsed again from the text it was parsed from
    (a direct answer: the sensor's; a conversation's: the reasoner's last turn)."""
    from clearsight.probe.reasoner.parsing import parse_action, parse_letter

    last = t.turns[-1]
    failed = last.reply is not None and last.reply.error is not None
    if t.strategy == "direct":
        if failed:
            return t
        letter = parse_letter(last.raw, letters, t.options)
        last = replace(last, commit=letter, note="" if letter else "unparsed")
        stop = "committed" if letter else "unparsed"
    else:
        if not last.raw or t.stop not in ("committed", "budget"):
            return t
        action = parse_action(last.raw, letters, t.options)
        letter = action.letter if action.kind == "commit" else None
        last = replace(last, commit=letter)
        stop = "committed" if letter else t.stop
    return replace(t, turns=(*t.turns[:-1], last)).finish(letter, stop)


#: The record kinds whose read-outs are derived again, and how.
DERIVED: dict[str, Derive] = {
    "sweep": _sweep,
    "grounding.trajectory": _trajectory,
    "grounding.elicit": _elicit,
    "grounding.judge": _judge,
    "probe": _probe,
}


@dataclass(frozen=True)
class Rederived:
    """What :func:`rederive` found: ``checked`` records per kind, ``skipped`` records per kind
    it cannot read, and ``differ``: (key, kind, the read-out names whose values differ)."""

    checked: dict[str, int]
    skipped: dict[str, int]
    differ: list[tuple[str, str, tuple[str, ...]]]

    @property
    def exit_code(self) -> int:
        """0 when every derived read-out equals the stored one, 3 when some differ."""
        return 3 if self.differ else 0


def _changed(stored: Mapping[str, Any], derived: Mapping[str, Any]) -> tuple[str, ...]:
    """The read-out names whose stored and derived values differ (a name only one has too)."""
    names = sorted(set(stored) | set(derived))
    return tuple(
        n
        for n in names
        if n not in stored or n not in derived or not same_value(stored[n], derived[n])
    )


def rederive(run_dir: Path) -> Rederived:
    """Derive every known record's read-outs again from its raw output (module docstring)."""
    checked: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    differ: list[tuple[str, str, tuple[str, ...]]] = []
    with RunStore.open(run_dir, read_only=True) as store:
        for rec in store.iter_records("ok"):
            kind, spec = rec.protocol, rec.spec
            if kind == VERIFY_KIND:  # a re-ask: read as the record it repeats
                original = store.record(rec.spec["of"])
                spec = {} if original is None else original.spec
                derive = DERIVED.get(rec.spec.get("of_kind", "")) if original else None
            else:
                derive = DERIVED.get(kind)
            if derive is None:
                skipped[kind] += 1
                continue
            checked[kind] += 1
            changed = _changed(rec.readouts, derive(spec, rec.raw, rec.readouts))
            if changed:
                differ.append((rec.key, kind, changed))
    return Rederived(dict(checked), dict(skipped), differ)
