"""Reading a question's text: its lettered options, the COCO categories they name, the
abstain option and the category a Yes / No question asks about; and, for questions about a
whole photo, its type and the objects it names (:func:`question_type`, :func:`mentions`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final, Literal

from clearsight.perceiver.detector import (
    COCO_NAMES,
)
from clearsight.scenes.categories import SUPERCATEGORY

YES_NO: Final = ("yes", "no")


#: An option line: ``A. text``, ``A) text`` or ``(A) text`` (the probe's form).
_OPTION = re.compile(r"^\s*\(?([A-Z])[.)]\s+(.+?)\s*$")


@dataclass(frozen=True)
class ParsedQuestion:
    """What the perceiver needs from a question's text.

    ``kind``: ``identify`` (options naming categories), ``verify`` (Yes / No about
    ``asked``), ``options`` (lettered options it cannot map) or ``free`` (no options).
    ``categories[letter]`` is the COCO category an option names (None if it names none);
    ``abstain`` is the letter of a last option that is neither a category nor Yes / No.
    """

    kind: Literal["identify", "verify", "options", "free"]
    letters: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    categories: dict[str, str | None] = field(default_factory=dict)
    abstain: str | None = None
    asked: str | None = None
    verbalized: bool = False
    text: str = ""
    stem: str = ""

    @property
    def content_letters(self) -> tuple[str, ...]:
        return tuple(x for x in self.letters if x != self.abstain)


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z ]", " ", text.lower())).strip()


def category_of(text: str) -> str | None:
    """The COCO category an option text names (case, articles and a plural 's' ignored)."""
    t = normalise(text)
    t = re.sub(r"^(a|an|the) ", "", t)
    aliases = {"people": "person", "persons": "person", "man": "person", "woman": "person"}
    if t in aliases:
        return aliases[t]
    for candidate in (t, t[:-1] if t.endswith("s") else t, t[:-2] if t.endswith("es") else t):
        if candidate in COCO_NAMES:
            return candidate
    return None


def mentioned_category(text: str) -> str | None:
    """The longest COCO category named in ``text`` (plural 's' allowed), or None."""
    t = f" {normalise(text)} "
    hits = [c for c in COCO_NAMES if f" {c} " in t or f" {c}s " in t or f" {c}es " in t]
    if " people " in t or " persons " in t:
        hits.append("person")
    return max(hits, key=len) if hits else None


def parse_question(text: str) -> ParsedQuestion:
    """Options, their categories, the abstain option and the asked category of a question."""
    letters: list[str] = []
    options: list[str] = []
    stem: list[str] = []
    for line in text.splitlines():
        m = _OPTION.match(line)
        if m and (not letters or ord(m.group(1)) == ord(letters[-1]) + 1):
            letters.append(m.group(1))
            options.append(m.group(2))
        elif not letters:
            stem.append(line)
    verbalized = bool(re.search(r"confidence\s*:", text, re.IGNORECASE))
    if not letters:
        return ParsedQuestion("free", verbalized=verbalized, text=text, stem=text.strip())
    categories = {x: category_of(o) for x, o in zip(letters, options, strict=True)}
    lowered = [normalise(o) for o in options]
    abstain = None
    if len(letters) > 1 and categories[letters[-1]] is None and lowered[-1] not in YES_NO:
        abstain = letters[-1]
    kind: Literal["identify", "verify", "options"] = "options"
    asked = None
    if lowered[:2] == list(YES_NO):
        asked = mentioned_category(" ".join(stem))
        kind = "verify" if asked is not None else "options"
    elif any(categories[x] is not None for x in letters if x != abstain):
        kind = "identify"
    return ParsedQuestion(
        kind,
        letters=tuple(letters),
        options=tuple(options),
        categories=categories,
        abstain=abstain,
        asked=asked,
        verbalized=verbalized,
        text=text,
        stem="\n".join(stem).strip(),
    )


# --------------------------------------------------------------------------------------------
# Questions about a whole photo
# --------------------------------------------------------------------------------------------

#: What a question about a whole photo asks for (see :func:`question_type`).
QuestionType = Literal["count", "colour", "greyscale", "position", "presence", "identify", "other"]

#: Super-category names a question may use for a kind of object ("what animal", "how many
#: vehicles"); COCO's others (outdoor, indoor, kitchen, sports, person) name places or
#: activities in questions, not kinds of object.
KINDS: Final = frozenset(SUPERCATEGORY.values()) - {
    "outdoor",
    "indoor",
    "kitchen",
    "sports",
    "person",
}
#: Words for a person.
PEOPLE: Final = frozenset({"people", "persons", "man", "men", "woman", "women", "boy", "girl"})


def question_type(stem: str) -> QuestionType:
    """The type of a question about a whole photo, from its words: ``greyscale`` ("in colour or
    in black and white?"), ``count`` ("how many"), ``colour``, ``position`` ("where", "relative
    to"; not which way something faces or moves), ``presence`` ("is there", "are there", "do
    you see"), ``identify`` ("what" / "which"), else ``other``."""
    s = normalise(stem)
    if re.search(r"\bcolou?r\b", s) and re.search(r"black and white|gr[ae]yscale|monochrome", s):
        return "greyscale"
    if re.search(r"\bhow many\b", s):
        return "count"
    if re.search(r"\bcolou?rs?\b", s):
        return "colour"
    if re.search(r"\b(facing|direction|walking|moving|looking)\b", s):
        return "other"
    if re.match(r"where\b", s) or re.search(r"\brelative to\b", s):
        return "position"
    if re.match(r"(is|are) there\b|(do|can) you see\b", s):
        return "presence"
    if re.match(r"(what|which)\b", s):
        return "identify"
    return "other"


@dataclass(frozen=True)
class Mention:
    """A kind of object named in a question: ``word`` (a COCO category or a super-category of
    :data:`KINDS`) at word index ``at`` of the normalised text, and the COCO categories it
    covers."""

    at: int
    word: str
    classes: frozenset[str]

    @property
    def is_kind(self) -> bool:
        """Whether it names a super-category ("animal") rather than one category."""
        return self.word in KINDS


def mentions(text: str) -> list[Mention]:
    """The objects ``text`` names, in order: COCO categories (plural 's' / 'es' allowed, words
    for people as ``person``; a longer name wins over one inside it, "fire hydrant" over none)
    and super-categories of :data:`KINDS` ("animals": every animal category)."""
    words = normalise(text).split()
    found: list[Mention] = []
    taken: set[int] = set()
    names = sorted(COCO_NAMES, key=lambda c: -len(c.split()))
    for name in names:
        n = len(name.split())
        for i in range(len(words) - n + 1):
            span = range(i, i + n)
            if taken & set(span):
                continue
            said = " ".join(words[i : i + n])
            if said in (name, f"{name}s", f"{name}es") or (name == "person" and said in PEOPLE):
                found.append(Mention(i, name, frozenset({name})))
                taken |= set(span)
    for i, w in enumerate(words):
        kind = w[:-1] if w.endswith("s") and w[:-1] in KINDS else w
        if i not in taken and kind in KINDS:
            classes = frozenset(c for c, s in SUPERCATEGORY.items() if s == kind)
            found.append(Mention(i, kind, classes))
    return sorted(found, key=lambda m: m.at)
