"""Detector mode's answers: option probabilities from the detector's class scores (the rule in
:mod:`clearsight.perceiver`), free-form answers from the detections, and replies naming a letter."""

from __future__ import annotations

import re
from typing import Final

import numpy as np

from clearsight.models.base import (
    Request,
)
from clearsight.perceiver.perception import Perception
from clearsight.perceiver.question import ParsedQuestion, mentioned_category

#: Probability put on the abstain option when nothing is detected in the box.
ABSTAIN_MASS: Final = 0.75


def detector_probs(p: Perception, q: ParsedQuestion) -> dict[str, float]:
    """Option probabilities from the detector's scores (the rule in the module docstring);
    they sum to 1 over the offered letters. Empty for a free-form question."""
    if not q.letters:
        return {}
    content = q.content_letters
    k = len(content)
    evidence: dict[str, float] = {}
    for o in p.objects:  # a detection not overlapping the box has evidence 0
        if o.evidence > 0:
            evidence[o.label] = max(evidence.get(o.label, 0.0), o.evidence)
    seen_anything = bool(p.in_box) and not p.too_small
    probs = dict.fromkeys(q.letters, 0.0)
    if q.kind == "identify":
        e = {x: evidence.get(q.categories[x] or "", 0.0) for x in content}
        m = max(e.values())
        total = sum(e.values())
        for x in content:
            probs[x] = (m * e[x] / total if total > 0 else 0.0) + (1.0 - m) / k
    elif q.kind == "verify" and k == 2:
        yes, no = content
        m = max(evidence.values(), default=0.0)
        total = sum(evidence.values())
        share = evidence.get(q.asked or "", 0.0) / total if total > 0 else 0.0
        probs[yes] = m * share + (1.0 - m) / 2
        probs[no] = 1.0 - probs[yes]
    else:  # options the detector cannot map: a uniform guess
        for x in content:
            probs[x] = 1.0 / k
    if q.abstain is not None and not seen_anything:
        probs = {x: (1.0 - ABSTAIN_MASS) * v for x, v in probs.items()}
        probs[q.abstain] = ABSTAIN_MASS
    return probs


def free_answer(p: Perception, question: str) -> str:
    """A short answer to a free-form question from the detections: a count for "how many",
    a colour for "what colour", else the name of the boxed (or most confident) object."""
    asked = mentioned_category(question)
    q = question.lower()
    pool = p.in_box if p.box_found and p.in_box else sorted(p.objects, key=lambda o: -o.score)
    if re.search(r"\bhow many\b", q):
        if asked is None:
            return str(len(p.objects))
        return str(sum(o.label == asked for o in p.objects))
    if re.search(r"\bcolou?r\b", q):
        named = [o for o in pool if asked is None or o.label == asked] or [
            o for o in p.objects if o.label == asked
        ]
        return named[0].colour if named else "unknown"
    if not pool:
        return "nothing detected"
    return pool[0].label


def letter_texts(probs: dict[str, float], request: Request, verbalized: bool) -> tuple[str, ...]:
    """``n`` replies naming a letter: the argmax when greedy, else draws from ``probs``."""
    letters = list(probs)
    weights = np.array([probs[x] for x in letters], np.float64)
    d = request.decoding
    if d.temperature == 0 or weights.sum() <= 0:
        chosen = [letters[int(np.argmax(weights))]] * request.n
    else:
        rng = np.random.default_rng(0 if d.seed is None else d.seed)
        w = weights ** (1.0 / d.temperature)
        idx = rng.choice(len(letters), size=request.n, p=w / w.sum())
        chosen = [letters[int(i)] for i in idx]
    if verbalized:
        return tuple(f"Answer: {c}\nConfidence: {round(100 * probs[c])}" for c in chosen)
    return tuple(chosen)
