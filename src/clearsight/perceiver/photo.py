"""Detector mode's answers about a whole photo (no red box): each question read by its type.

The probe's questions ("What animal is sitting on the porch?", "What colour is the frame of the
bicycle?") are about a photo with no red box, so the box rule of :mod:`~clearsight.perceiver`
has nothing to go on. Here a question's type (:func:`~clearsight.perceiver.question.question_type`)
says what to read from the detections and the pixels, and the objects it names
(:func:`~clearsight.perceiver.question.mentions`) say which detections:

* **the subject** — the first object named ("the *dog* relative to the bicycle", "the *person*'s
  jacket"); a super-category ("what *animal*") covers its COCO categories. Among several, a
  word of the question picks one: "largest", "biggest",
  "nearest", "closest", "foreground" the largest box, "left" / "right" / "top" / "upper" /
  "bottom" / "lower" the one furthest that way, else the best-scoring one.
* **identify** — the subject's kind restricts the candidates (an animal question picks among
  animal detections); an option is as strong as the weakest of its parts joined by "and" ("a
  giraffe and a zebra"), a part as the best score of the category it names (0 when it names
  none or the category was not detected); options share ``m =
  max e`` by ``e`` and ``1 - m`` uniformly, the identification rule of the box. Free form: the
  best candidate's name (two names for "which two").
* **count** — detections of the counted kind ("how many *animals*"), one per object (a
  detection overlapping a better one of the kind by IoU >= 0.6, or lying 90 % inside it, is
  the same object); an option says a number ("two", "3", "none", "more than five") and the
  options matching the count share the confidence ``c`` (the counted objects' mean score).
* **colour** — the pixels of the subject's box (its central half, less background), or of the
  whole photo when the question names no detected object, or names it only as a place ("the
  vegetation behind the animals"); a "left" / "right" in such a question keeps that half of the
  photo. Each option scores the share of pixels nearest its colour among the options' colours
  in CIELAB (:mod:`~clearsight.perceiver.colours`); an option naming colours joined by "and"
  ("spotted black and white") scores its weakest colour. Free form: the basic colour term.
* **greyscale** — "in colour or in black and white": the photo's mean CIELAB chroma below
  :data:`GREY_CHROMA` is black and white.
* **position** — the subject relative to a second object ("relative to the bicycle") or, with
  none, its place in the photo (thirds, :func:`~clearsight.perceiver.perception.position`); an
  option scores the direction words it shares with that (left, right, top / upper / above,
  bottom / lower / below / under) less those it contradicts.
* **presence** — "is there a X": ``p(yes) = (1 + s) / 2`` with ``s`` the best score of X, else
  ``PRESENCE_MISSED``.

Otherwise (what the detector cannot read: a brand, a profession, where a photo was taken) the
options are equally likely and a free-form reply says what was detected. Options get
probabilities ``p = c s / sum s + (1 - c) / k`` from scores ``s`` and a confidence ``c``; "there
is no X" never scores (a detector's miss is weak evidence of absence).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from clearsight.perceiver.colours import BASIC_COLOURS, colour_shares, lab, named_colours
from clearsight.perceiver.perception import Perception, Seen, position
from clearsight.perceiver.question import (
    Mention,
    ParsedQuestion,
    mentions,
    normalise,
    question_type,
)

#: Mean CIELAB chroma below which a photo is black and white (sRGB greys have chroma ~0; JPEG
#: noise and a tint stay under a few units; the bundled colour photos are at 10-43).
GREY_CHROMA: Final = 4.0
#: p(yes) of a presence question when the asked object was not detected.
PRESENCE_MISSED: Final = 0.25
#: Confidence of a colour read from pixels (the pixels are seen; which region is meant is not).
COLOUR_CONFIDENCE: Final = 0.8
#: Number words an option may use for a count.
_WORDS: Final = "zero one two three four five six seven eight nine ten eleven twelve"
NUMBERS: Final = {w: i for i, w in enumerate(_WORDS.split())} | {"none": 0, "no": 0}
_SIZE_WORDS: Final = ("largest", "biggest", "nearest", "closest", "foreground")
#: Direction words of a position option, as the side they name.
_SIDE: Final = {
    "left": "left",
    "right": "right",
    "top": "top",
    "upper": "top",
    "above": "top",
    "bottom": "bottom",
    "lower": "bottom",
    "below": "bottom",
    "under": "bottom",
}
_OPPOSITE: Final = {"left": "right", "right": "left", "top": "bottom", "bottom": "top"}


@dataclass(frozen=True)
class Reading:
    """What the photo says about a question: option scores ``s`` (>= 0, by option index; empty
    without options or when the detector cannot tell), the confidence ``c`` and the free-form
    reply."""

    scores: tuple[float, ...]
    confidence: float
    reply: str


def _centre(o: Seen) -> tuple[float, float]:
    return (o.box[0] + o.box[2]) / 2, (o.box[1] + o.box[3]) / 2


def _area(o: Seen) -> float:
    return (o.box[2] - o.box[0]) * (o.box[3] - o.box[1])


def of_kind(p: Perception, m: Mention) -> list[Seen]:
    """Detections of the categories ``m`` covers, best first."""
    return sorted((o for o in p.objects if o.label in m.classes), key=lambda o: -o.score)


def pick(objects: Sequence[Seen], stem: str) -> Seen | None:
    """The one of ``objects`` the question's words single out (module docstring)."""
    if not objects:
        return None
    words = set(normalise(stem).split())
    side = [_SIDE[w] for w in ("left", "right", "top", "upper", "bottom", "lower") if w in words]
    keys: dict[str, Callable[[Seen], float]] = {
        "left": lambda o: -_centre(o)[0],
        "right": lambda o: _centre(o)[0],
        "top": lambda o: -_centre(o)[1],
        "bottom": lambda o: _centre(o)[1],
    }
    if side:
        return max(objects, key=keys[side[0]])
    if words & set(_SIZE_WORDS):
        return max(objects, key=_area)
    return max(objects, key=lambda o: o.score)


def distinct(objects: Sequence[Seen]) -> list[Seen]:
    """One detection per object: best first, dropping one that overlaps a kept one by IoU >=
    0.6 or lies 90 % inside it (or it inside the other)."""
    kept: list[Seen] = []
    for o in sorted(objects, key=lambda o: -o.score):
        same = False
        for k in kept:
            ix = max(0.0, min(o.box[2], k.box[2]) - max(o.box[0], k.box[0]))
            iy = max(0.0, min(o.box[3], k.box[3]) - max(o.box[1], k.box[1]))
            inter = ix * iy
            small = max(min(_area(o), _area(k)), 1e-9)
            union = max(_area(o) + _area(k) - inter, 1e-9)
            same = same or inter / union >= 0.6 or inter / small >= 0.9
        if not same:
            kept.append(o)
    return kept


def option_number(text: str) -> tuple[int, bool] | None:
    """The count an option says: ``(n, False)`` for exactly ``n`` ("two", "3", "none"),
    ``(n, True)`` for more than ``n`` ("more than five"); None when it says no number."""
    words = normalise(re.sub(r"(\d+)", r" \1 ", text)).split()
    more = "more" in words or "over" in words
    for w in words:
        if w.isdigit():
            return int(w), more
        if w in NUMBERS:
            return NUMBERS[w], more
    nums = re.findall(r"\d+", text)
    return (int(nums[0]), more) if nums else None


def _and(text: str) -> list[str]:
    """The parts of an option joined by "and" ("a giraffe and a zebra")."""
    return [part for part in re.split(r"\band\b", text) if part.strip()]


def _listing(p: Perception) -> str:
    counts: dict[str, int] = {}
    for o in sorted(p.objects, key=lambda o: -o.score):
        counts[o.label] = counts.get(o.label, 0) + 1
    return ", ".join(f"{n} {label}" if n > 1 else label for label, n in counts.items())


def _cannot(p: Perception) -> Reading:
    seen = _listing(p)
    return Reading((), 0.0, f"I cannot tell; I see {seen}" if seen else "I cannot tell")


# ------------------------------------------------------------------------ one reader per type


def _count(p: Perception, q: ParsedQuestion, named: list[Mention]) -> Reading:
    words = normalise(q.stem).split()
    many = words.index("many") if "many" in words else -1
    subject = next((m for m in named if 0 < m.at - many <= 2), None)
    if subject is None:
        return _cannot(p)
    counted = distinct([o for o in p.objects if o.label in subject.classes])
    n = len(counted)
    confidence = float(np.mean([o.score for o in counted])) if counted else 0.5
    scores = []
    for text in q.options:
        said = option_number(text)
        fits = said is not None and (n > said[0] if said[1] else n == said[0])
        scores.append(1.0 if fits else 0.0)
    return Reading(tuple(scores), confidence, str(n))


def _region_object(p: Perception, stem: str, named: list[Mention]) -> Seen | None:
    """The detected object whose pixels a colour question asks about, if any: the first named
    object when it heads the phrase after "colour is / are the" (at most two words before it,
    or "the X of the" it: "the frame of the bicycle"), not when it is named as a place ("the
    vegetation behind the animals", "the background on the right of the person")."""
    words = normalise(stem).split()
    at = next((i + 1 for i, w in enumerate(words) if w in ("is", "are")), 0)
    if at < len(words) and words[at] == "the":
        at += 1
    for m in named:
        before = words[at : m.at]
        if before[-2:] == ["of", "the"]:
            before = before[:-2]
        places = {"behind", "left", "right", "under", "above", "below", "near", "next", "on"}
        if len(before) <= 2 and "the" not in before and not places & set(words[at : m.at]):
            return pick(of_kind(p, m), stem)
        break
    return None


def _pixels(image: npt.NDArray[np.uint8], o: Seen | None, stem: str) -> npt.NDArray[np.uint8]:
    """The object's central half, or the photo (one half of it for "left" / "right")."""
    width = image.shape[1]
    if o is None:
        words = set(normalise(stem).split())
        if "right" in words and "left" not in words:
            return image[:, width // 2 :]
        if "left" in words and "right" not in words:
            return image[:, : width // 2]
        return image
    x0, y0, x1, y1 = o.box
    w, h = x1 - x0, y1 - y0
    c0, c1 = int(x0 + w / 4), int(np.ceil(x1 - w / 4))
    r0, r1 = int(y0 + h / 4), int(np.ceil(y1 - h / 4))
    return image[max(r0, 0) : max(r1, r0 + 1), max(c0, 0) : max(c1, c0 + 1)]


def _ring(image: npt.NDArray[np.uint8], o: Seen) -> npt.NDArray[np.uint8]:
    """The pixels around the object's box: the box grown by half its size on every side
    (clipped to the photo), less the box."""
    height, width = image.shape[:2]
    x0, y0, x1, y1 = (round(v) for v in o.box)
    w, h = x1 - x0, y1 - y0
    gx0, gy0 = max(x0 - w // 2, 0), max(y0 - h // 2, 0)
    gx1, gy1 = min(x1 + w // 2, width), min(y1 + h // 2, height)
    mask = np.zeros((height, width), bool)
    mask[gy0:gy1, gx0:gx1] = True
    mask[max(y0, 0) : y1, max(x0, 0) : x1] = False
    return image[mask]


def distinctive_shares(
    image: npt.NDArray[np.uint8], o: Seen | None, stem: str, names: Sequence[str]
) -> dict[str, float]:
    """Per colour name, how much it marks the region: its share of the region's pixels
    (:func:`_pixels`) less its share around the object (:func:`_ring`), floored at 0 — a
    colour the surroundings have as much of is the background seen through the box. Plain
    shares for the whole photo, or where the ring holds under a quarter as many pixels as the
    region or no colour stands out."""
    pixels = _pixels(image, o, stem)
    inside = colour_shares(pixels, names)
    if o is None:
        return inside
    ring = _ring(image, o)
    if ring.shape[0] < pixels.size // 3 // 4:
        return inside
    around = colour_shares(ring, names)
    excess = {c: max(0.0, inside[c] - around[c]) for c in names}
    return excess if sum(excess.values()) > 0 else inside


def _colour(
    p: Perception, q: ParsedQuestion, named: list[Mention], image: npt.NDArray[np.uint8]
) -> Reading:
    o = _region_object(p, q.stem, named)
    parts = [[named_colours(part) for part in _and(t)] for t in q.options]
    palette = sorted({c for option in parts for part in option for c in part})
    shares = distinctive_shares(image, o, q.stem, palette)
    scores = []
    for option in parts:
        strengths = [sum(shares[c] for c in part) for part in option if part]
        scores.append(min(strengths) if strengths else 0.0)
    confidence = COLOUR_CONFIDENCE * (1.0 if o is None else min(1.0, o.score / 0.5))
    basic = distinctive_shares(image, o, q.stem, BASIC_COLOURS)
    return Reading(tuple(scores), confidence, max(BASIC_COLOURS, key=basic.__getitem__))


def _greyscale(q: ParsedQuestion, image: npt.NDArray[np.uint8]) -> Reading:
    step = max(1, int(np.sqrt(image.shape[0] * image.shape[1] / 4096)))
    sample = lab(image[::step, ::step])
    grey = float(np.hypot(sample[..., 1], sample[..., 2]).mean()) < GREY_CHROMA
    scores = []
    for text in q.options:
        says_grey = {"black", "white"} <= set(named_colours(text)) or bool(
            re.search(r"gr[ae]yscale|monochrome", text.lower())
        )
        scores.append(1.0 if says_grey == grey else 0.0)
    return Reading(tuple(scores), COLOUR_CONFIDENCE, "black and white" if grey else "in colour")


def _directions(p: Perception, s: Seen, ref: Seen | None) -> set[str]:
    """Direction words true of ``s``: relative to ``ref`` (horizontal beyond 10 % of its width,
    vertical beyond 25 % of its height), else its thirds of the photo."""
    if ref is None:
        return {w for w in position(s.box, p.width, p.height).split() if w != "centre"}
    (sx, sy), (rx, ry) = _centre(s), _centre(ref)
    out = set()
    if abs(sx - rx) > 0.1 * (ref.box[2] - ref.box[0]):
        out.add("left" if sx < rx else "right")
    if abs(sy - ry) > 0.25 * (ref.box[3] - ref.box[1]):
        out.add("top" if sy < ry else "bottom")
    return out


def _position(p: Perception, q: ParsedQuestion, named: list[Mention]) -> Reading:
    words = normalise(q.stem).split()
    relative = words.index("relative") if "relative" in words else len(words)
    subjects = [m for m in named if m.at < relative]
    refs = [m for m in named if m.at > relative]
    s = pick(of_kind(p, subjects[0]), q.stem) if subjects else None
    if s is None:
        return _cannot(p)
    ref = pick(of_kind(p, refs[0]), "") if refs else None
    true = _directions(p, s, ref)
    scores = []
    for text in q.options:
        said = {_SIDE[w] for w in normalise(text).split() if w in _SIDE}
        none = re.search(r"\bthere (is|are) no\b", text.lower()) is not None
        hits = len(said & true) - len(said & {_OPPOSITE[w] for w in true})
        scores.append(0.0 if none else max(0.0, float(hits)))
    order = sorted(true, key=["top", "bottom", "left", "right"].index)
    if ref is None:
        reply = f"in the {' '.join(order) or 'centre'} of the image"
    else:
        words_of = {"top": "above", "bottom": "below", "left": "to the left of"}
        phrases = [words_of.get(w, "to the right of") for w in order]
        reply = f"{' and '.join(phrases) or 'by'} the {ref.label}"
    confidence = min(s.score, ref.score) if ref else s.score
    return Reading(tuple(scores), confidence, reply)


def _presence(p: Perception, q: ParsedQuestion, named: list[Mention]) -> Reading:
    found = [o for m in named[:1] for o in p.objects if o.label in m.classes]
    if not named:
        return _cannot(p)
    yes = (1.0 + max(o.score for o in found)) / 2 if found else PRESENCE_MISSED
    scores = tuple(
        yes if normalise(t) == "yes" else 1.0 - yes if normalise(t) == "no" else 0.0
        for t in q.options
    )
    return Reading(scores, 1.0, "yes" if found else "no")


def _identify(p: Perception, q: ParsedQuestion, named: list[Mention]) -> Reading:
    subject = named[0] if named else None
    if subject is not None and not subject.is_kind:
        return _cannot(p)  # "what is the man looking through": not the man
    pool = [o for o in p.objects if subject is None or o.label in subject.classes]
    if subject is not None and (one := pick(pool, q.stem)) is not None:
        words = set(normalise(q.stem).split())
        if words & {"left", "right", "top", "bottom", "upper", "lower"}:
            pool = [o for o in pool if o.box == one.box]  # the object on that side
    best: dict[str, float] = {}
    for o in pool:
        best[o.label] = max(best.get(o.label, 0.0), o.score)
    scores = []
    for text in q.options:
        parts = [[m.word for m in mentions(part) if not m.is_kind] for part in _and(text)]
        strengths = [max((best.get(c, 0.0) for c in part), default=0.0) for part in parts]
        scores.append(min(strengths, default=0.0))
    names = sorted(best, key=lambda c: -best[c])
    many = 2 if "two" in normalise(q.stem).split() else 1
    reply = " and ".join(names[:many]) if names else "nothing I can recognise"
    return Reading(tuple(scores), max(scores, default=0.0), reply)


def about_photo(p: Perception, q: ParsedQuestion) -> bool:
    """Whether ``q`` is read as a question about the whole photo: no red box was found and the
    question does not ask about one (the sweep's questions keep the box rule)."""
    return not p.box_found and "red box" not in q.text.lower()


def read_photo(p: Perception, q: ParsedQuestion, image: npt.NDArray[np.uint8]) -> Reading:
    """What the photo says about question ``q`` (its type's reader, module docstring)."""
    if p.too_small:
        return Reading((), 0.0, "the image is too small to see anything")
    kind = question_type(q.stem)
    named = mentions(q.stem)
    if kind == "count":
        return _count(p, q, named)
    if kind == "colour":
        return _colour(p, q, named, image)
    if kind == "greyscale":
        return _greyscale(q, image)
    if kind == "position":
        return _position(p, q, named)
    if kind == "presence":
        return _presence(p, q, named)
    if kind == "identify":
        return _identify(p, q, named)
    return _cannot(p)


def photo_probs(reading: Reading, q: ParsedQuestion) -> dict[str, float]:
    """Option probabilities ``c s / sum s + (1 - c) / k`` over the options (uniform when no
    score is positive); they sum to 1. Every option is an answer here: the last one of a
    photo question ("there is no dog", "in black and white") is no abstain option."""
    s = list(reading.scores) if reading.scores else [0.0] * len(q.letters)
    total = sum(s)
    c = min(max(reading.confidence, 0.0), 1.0) if total > 0 else 0.0
    k = len(q.letters)
    return {
        x: c * (v / total if total > 0 else 0.0) + (1.0 - c) / k
        for x, v in zip(q.letters, s, strict=True)
    }
