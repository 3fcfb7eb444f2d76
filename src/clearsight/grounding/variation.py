"""Content variation (paper §3.2, App. A.1.3-4): confidence under alternative trajectory parts.

For each axis one component of a trajectory is replaced by an alternative and both are scored
with the run's read-outs; the divergence between the two confidence distributions is the
Jensen-Shannon divergence in bits (:func:`clearsight.metrics.jsd_bits`; for a read-out with
several slots, the mean over its slots of the per-slot JSDs, App. A.1.4), and the paper
reports P(JSD <= 0.1) per axis. Two modes:

* **sampled** (the paper's): K alternatives per axis of the model's **own** trajectory, each
  sampled by the model itself (temperature :data:`TEMPERATURE`, nucleus :data:`TOP_P`, a
  generator seeded per problem, axis and k) from its trajectory cut at that axis's tag — the
  vision alternative from ``Observation:`` on, the reasoning one from ``Reasoning:`` on after
  the original observation, the answer one from ``Answer:`` on. Only the axis's new text is
  kept, the other components copied. A vision or reasoning alternative must keep the answer
  (the sample's own answer is compared with the original's; a sample that reaches no answer
  within its tokens is cut after its last full sentence and continued greedily from
  ``Answer:``, as an own trajectory is, and marked ``answer_forced``); an answer alternative must
  replace it; the others are rejected, the reason recorded. The original is the own
  trajectory's visible read-out (``self/r0.00``); the alternatives are ``variation/<axis>/s<k>``.
* **handwritten** (deterministic): one alternative per axis of the canonical solution (the
  generator's ``observation_alt`` / ``reasoning_alt``, the TGS-Bench answer rule), against
  ``bench/good``; the variant is ``variation/<axis>/alt``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from clearsight.grounding.bench.pairs import AXES, bad_trajectory, perturb_answer
from clearsight.grounding.problems.problem import Problem, normalise_answer
from clearsight.grounding.trajectories.generation import (
    finish_generation,
    has_answer,
    last_sentence_end,
)
from clearsight.grounding.trajectories.parsing import parse_trajectory
from clearsight.grounding.trajectories.templates import template_by_id
from clearsight.grounding.trajectories.trajectory import (
    Template,
    Trajectory,
    default_template,
    good_trajectory,
    user_message,
)
from clearsight.grounding.trajectories.written import force_suffix, parse_written
from clearsight.metrics.divergence import jsd_bits_batch
from clearsight.models.base import Decoding, Message, Request, TextPart
from clearsight.models.replies import checked_replies, replaced_where
from clearsight.seeding import rng_for
from clearsight.validate import InputError

if TYPE_CHECKING:
    import pandas as pd

    from clearsight.grounding.specs import VariationSpec
    from clearsight.models.base import Backend

JSD_THRESHOLD = 0.1
#: Sampling of the alternatives ("diverse sampling", App. A.1.3).
TEMPERATURE = 1.0
TOP_P = 0.95
#: Tokens an answer alternative may generate (the answer line only), and a forced answer.
ANSWER_TOKENS = 16


def variation_variant(axis: str, sample: int | None = None) -> str:
    """Variant name of an axis's alternative: ``variation/<axis>/alt`` (hand-written) or
    ``variation/<axis>/s<k>`` (sampled alternative k)."""
    return f"variation/{axis}/alt" if sample is None else f"variation/{axis}/s{sample}"


def original_variant(variant: str) -> str:
    """The variant an alternative is compared with: the own visible read-out for a sampled
    alternative, the canonical good trajectory for a hand-written one."""
    return "bench/good" if variant.endswith("/alt") else "self/r0.00"


def alternative(problem: Problem, axis: str) -> Trajectory:
    """The hand-written alternative: the good trajectory with its ``axis`` component
    replaced."""
    good = good_trajectory(problem)
    sol = problem.solution or {}
    if axis == "vision":
        text = sol.get("observation_alt")
    elif axis == "reasoning":
        text = sol.get("reasoning_alt")
    elif axis == "answer":
        text, _ = perturb_answer(good.answer, problem, rng_for("grounding.variation", problem.id))
    else:
        raise InputError(f"unknown axis {axis!r}")
    if not text:
        raise InputError(f"problem {problem.id} has no {axis} alternative")
    return bad_trajectory(good, axis, text)


# --------------------------------------------------------------------------------------------
# Sampled alternatives
# --------------------------------------------------------------------------------------------


def axis_prefix(trajectory: Trajectory, axis: str, template: Template | None = None) -> str:
    """The trajectory's text (rendered by ``template``, or as written) up to the start of
    ``axis``'s segment — past its tag: where its sampled alternative starts."""
    if axis not in AXES:
        raise InputError(f"unknown axis {axis!r}; one of {AXES}")
    text, spans = trajectory.render(template or default_template())
    return text[: spans[axis][0]].rstrip(" ")


def _parsed(text: str, t: Template) -> Trajectory:
    """A finished sampled text's segments (a native template's where they stand)."""
    return parse_written(text, t) if t.native else parse_trajectory(text, t)


def sampled_alternative(
    problem: Problem,
    original: Trajectory,
    axis: str,
    generated: str,
    template: Template | None = None,
) -> Trajectory:
    """The alternative that ``generated`` (the text sampled after :func:`axis_prefix`) makes:
    ``original`` with its ``axis`` component replaced by the sample's (a trajectory kept as
    written stays as written around it). InputError with the reason when the sample cannot be
    read, says the same thing, or breaks the axis's answer rule (vision / reasoning keep the
    answer, answer replaces it)."""
    t = template or default_template()
    parsed = _parsed(finish_generation(axis_prefix(original, axis, t) + generated, t), t)
    new = getattr(parsed, axis).strip()
    if not new:
        raise InputError(f"the sampled {axis} alternative is empty")
    if new == getattr(original, axis).strip():
        raise InputError(f"the sampled {axis} alternative is the original text")
    before = normalise_answer(original.answer, problem.answer_type)
    after = normalise_answer(parsed.answer, problem.answer_type)
    if axis != "answer" and after != before:
        raise InputError(
            f"the sampled {axis} alternative changes the answer "
            f"({original.answer.strip()!r} -> {parsed.answer.strip()!r})"
        )
    if axis == "answer" and (after is None or after == before):
        raise InputError(f"the sampled answer {new!r} does not replace the original answer")
    return bad_trajectory(original, axis, new)


def sample_requests(specs: Sequence[VariationSpec], images: Sequence[Any]) -> list[Request]:
    """One sampling request per alternative, seeded by its spec (all go to the backend at
    once, so a unit's alternatives share its batches)."""
    out = []
    for spec, image in zip(specs, images, strict=True):
        t = _t(spec)
        prefix = axis_prefix(spec.trajectory, spec.axis, t)
        tokens = spec.answer_tokens if spec.axis == "answer" else spec.max_new_tokens
        out.append(
            Request(
                (
                    user_message(spec.problem, t, image),
                    Message("assistant", (TextPart(prefix),)),
                ),
                Decoding(
                    max_new_tokens=tokens,
                    temperature=spec.temperature,
                    top_p=spec.top_p,
                    seed=spec.seed,
                ),
            )
        )
    return out


def _force_answers(
    backend: Backend,
    specs: Sequence[VariationSpec],
    images: Sequence[Any],
    texts: list[str | Exception],
    replaced: list[list[str]],
) -> set[int]:
    """Vision and reasoning samples that reach no answer within their tokens are cut after
    their last full sentence and continued greedily from the answer tag for their
    ``answer_tokens`` (as an own trajectory is), so that whether they keep the
    answer can be read; ``texts`` is updated in place (a continuation without a reply that can
    be read: its exception), and ``replaced`` with where a continuation's lone surrogates were
    replaced; the indices continued returned."""
    need = [
        i
        for i, (spec, text) in enumerate(zip(specs, texts, strict=True))
        if isinstance(text, str) and spec.axis != "answer" and _needs_answer(spec, text)
    ]
    if not need:
        return set()
    bodies = {i: _forced(specs[i], str(texts[i])) for i in need}
    requests = [
        Request(
            (
                user_message(specs[i].problem, _t(specs[i]), images[i]),
                Message(
                    "assistant",
                    (
                        TextPart(
                            axis_prefix(specs[i].trajectory, specs[i].axis, _t(specs[i]))
                            + bodies[i]
                        ),
                    ),
                ),
            ),
            Decoding(max_new_tokens=specs[i].answer_tokens),
        )
        for i in need
    ]
    for i, r in zip(need, checked_replies(backend, requests), strict=True):
        texts[i] = r if isinstance(r, Exception) else bodies[i] + r.texts[0]
        replaced[i] += [] if isinstance(r, Exception) else replaced_where(r, "answer: ")
    return set(need)


def _t(spec: VariationSpec) -> Template:
    """The template ``spec`` was planned with."""
    return template_by_id(spec.template.id)


def _needs_answer(spec: VariationSpec, text: str) -> bool:
    """Whether a vision or reasoning sample reached no answer (a native one: with its prefix,
    in the template's way)."""
    t = _t(spec)
    if not t.native:
        return t.answer_tag.lower() not in finish_generation(text).lower()
    return not has_answer(
        finish_generation(axis_prefix(spec.trajectory, spec.axis, t) + text, t), t
    )


def _forced(spec: VariationSpec, text: str) -> str:
    """A sample without an answer cut after its last full sentence, then the answer tag (a
    native template's ``force`` after the prefix and sample)."""
    t = _t(spec)
    if not t.native:
        return last_sentence_end(text).rstrip() + "\n" + t.answer_tag
    prefix = axis_prefix(spec.trajectory, spec.axis, t)
    body = last_sentence_end(text).rstrip()
    return body + force_suffix(prefix + body, t)


#: A sampled alternative: the sampled text, the alternative it makes (or why it was rejected),
#: whether its answer had to be forced and where lone surrogates were replaced in its replies.
Sampled = tuple[str, Trajectory | InputError, bool, list[str]]


def sample_alternatives(
    backend: Backend, specs: Sequence[VariationSpec], images: Sequence[Any]
) -> list[Sampled | Exception]:
    """Per spec the sampled text, the alternative it makes (or why it was rejected), whether
    its answer had to be forced (:func:`_force_answers`) and where lone surrogates were
    replaced in its replies; or the exception that says
    why the model gave no reply that can be read
    (:func:`~clearsight.models.replies.checked_replies`: that spec fails alone)."""
    replies = checked_replies(backend, sample_requests(specs, images))
    texts: list[str | Exception] = [r if isinstance(r, Exception) else r.texts[0] for r in replies]
    replaced = [[] if isinstance(r, Exception) else replaced_where(r) for r in replies]
    forced = _force_answers(backend, specs, images, texts, replaced)
    out: list[Sampled | Exception] = []
    for i, (spec, text) in enumerate(zip(specs, texts, strict=True)):
        if isinstance(text, Exception):
            out.append(text)
            continue
        try:
            alt = sampled_alternative(spec.problem, spec.trajectory, spec.axis, text, _t(spec))
            out.append((text, alt, i in forced, replaced[i]))
        except InputError as exc:
            out.append((text, exc, i in forced, replaced[i]))
    return out


# --------------------------------------------------------------------------------------------
# Divergences
# --------------------------------------------------------------------------------------------


def _distributions(row: pd.Series) -> dict[str, Any]:
    """A row's per-slot distributions (runs made before read-outs: its one ``probs``)."""
    d = row.get("distributions")
    if isinstance(d, dict) and d:
        return d
    return {"confidence": row["probs"]}


def jsd_per_item(frame: pd.DataFrame, axis: str) -> npt.NDArray[np.float64]:
    """JSD (bits) between each ``axis`` alternative's distributions and its original's
    (:func:`original_variant`), one per alternative whose problem has both; for several slots
    the mean of the per-slot JSDs (``frame``: columns problem, variant, probs and, where
    stored, distributions; one read-out)."""
    prefix = f"variation/{axis}/"
    alts = frame[frame["variant"].str.startswith(prefix)]
    originals = {
        (r["problem"], r["variant"]): _distributions(r)
        for _, r in frame[frame["variant"].isin(["bench/good", "self/r0.00"])].iterrows()
    }
    p: dict[str, list[Any]] = {}
    q: dict[str, list[Any]] = {}
    n = 0
    for _, row in alts.iterrows():
        orig = originals.get((row["problem"], original_variant(str(row["variant"]))))
        alt = _distributions(row)
        if orig is None or any(orig.get(s) is None or alt.get(s) is None for s in alt):
            continue
        for s in alt:
            p.setdefault(s, []).append(orig[s])
            q.setdefault(s, []).append(alt[s])
        n += 1
    if not n:
        return np.zeros(0)
    per_slot = [jsd_bits_batch(np.array(p[s]), np.array(q[s])) for s in p]
    return np.asarray(np.mean(per_slot, axis=0), dtype=np.float64)


def share_below(jsd: npt.ArrayLike, threshold: float = JSD_THRESHOLD) -> float:
    """P(JSD <= threshold): the share of alternatives whose confidence barely moved."""
    a = np.asarray(jsd, dtype=np.float64)
    return float(np.mean(a <= threshold)) if a.size else float("nan")
