"""Reading a question's text: its lettered options, the COCO categories they name, the
abstain option and the category a Yes / No question asks about."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final, Literal

from clearsight.perceiver.detector import (
    COCO_NAMES,
)

YES_NO: Final = ("yes", "no")


_OPTION = re.compile(r"^\s*([A-Z])[.)]\s+(.+?)\s*$")


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
        return ParsedQuestion("free", verbalized=verbalized, text=text)
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
    )
