"""Reading a reasoner's output: the query it asks or the option it commits to.

docs/methods.md §6. Each turn the reasoner either asks a self-contained query,
``My question is: "..."``, or commits, ``The answer is: (X)``. Parsing is meant to survive
small models: a commit is ``answer`` followed by a letter in parentheses or a bare capital
letter ending the phrase (``Answer: B``, ``**The answer is (b)**``, ``Answer[C]``),
``(B) is correct`` / ``option B is the answer``, an output that opens with ``(B)`` (unless it
echoes the option list) or is just ``B``, or ``The answer is`` followed by the exact text of an
option; a query is the text after ``question is``, ``Query:`` or ``Ask[...]`` (quoted or to the
end of the line), or failing those the last sentence ending in a question mark. The earliest
action in the text wins, and anything after a hallucinated ``Visual assistant:`` line is
dropped first (:func:`parse_action`). A direct (VLM) answer names its option more loosely
(:func:`parse_letter`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from clearsight.probe.judges import normalise

_END = r"(?=\s*(?:$|[.,;:!)\]*\n]))"
# Runs of white space and marks are matched possessively (``*+``): what follows them can never
# be white space or a mark, so giving some back never makes a match, and a long run of them
# costs one pass instead of a quadratic search.
_COMMIT_PAREN = re.compile(
    r"(?i:answer)(?:\s++(?i:is))?\s*+[:=\-]?\s*+(?i:option\s++)?[*\[]*+\s*+\(\s*+([A-Ja-j])\s*+\)"
)
_COMMIT_BARE = re.compile(
    r"(?i:answer)(?:\s++(?i:is))?\s*+[:=\-]?\s*+(?i:option\s++)?[*\[]*+\s*+([A-J])" + _END
)
_COMMIT_LEAD = re.compile(r"^\s*+[*\[]*+\s*+\(([A-J])\)|^\s*+([A-J])\s*+(?:\)|$)")
_COMMIT_IS = re.compile(
    r"(?:\(([A-J])\)|(?i:option)\s+\(?([A-J])\)?)\s+(?i:is)\s+(?i:the\s+)?"
    r"(?i:correct|right|answer|best)"
)
_OPTION_MARK = re.compile(r"\([A-J]\)")
_COMMIT_TEXT = re.compile(r"(?i:the\s+answer\s+is|answer\s*:)\s*(.+?)\s*(?:$|\n)")
_QUERY_QUOTED = re.compile(
    r"(?i:question\s++is|query|ask|action\s*+:\s*+ask)\s*+[:\[]?\s*+[\"“”']\s*(.+?)\s*[\"“”']", re.S
)
_QUERY_LINE = re.compile(r"(?i:question\s+is|query|ask)\s*[:\[]\s*(.+?)\s*\]?\s*(?:$|\n)")
#: A sentence ending in a question mark, from its first capital letter. Tried only where a
#: sentence starts (the text's start, or after . ! ? or a newline) and never backtracking, so
#: finding them all is one pass over the text (tried at every capital, a long stretch of
#: capitals without a sentence end took time quadratic in its length).
_QUESTION_SENTENCE = re.compile(r"(?:^|(?<=[.!?\n]))[^A-Z.!?\n]*+([A-Z][^.!?\n]*+\?)")
#: A line (after the first) that starts a hallucinated reply; leading spaces and tabs only, so
#: a long run of blank lines is passed once.
_HALLUCINATED = re.compile(
    r"(?<=\n)[^\S\n]*(?:visual assistant|assistant reply|consistency)\b", re.I
)


@dataclass(frozen=True)
class Action:
    """What one reasoner output asks for: ``kind`` is query, commit or none."""

    kind: Literal["query", "commit", "none"]
    query: str | None = None
    letter: str | None = None
    thought: str = ""
    note: str = ""


def _commit(text: str, letters: Sequence[str], options: Sequence[str]) -> tuple[int, str] | None:
    """``(position, letter)`` of the first commit in ``text``."""
    found: list[tuple[int, str]] = []
    for pattern in (_COMMIT_PAREN, _COMMIT_BARE):
        for m in pattern.finditer(text):
            letter = m.group(1).upper()
            if letter in letters:
                found.append((m.start(), letter))
                break
    for m in _COMMIT_IS.finditer(text):
        letter = m.group(1) or m.group(2)
        if letter in letters:
            found.append((m.start(), letter))
            break
    lead = _COMMIT_LEAD.match(text)
    if lead and len(_OPTION_MARK.findall(text)) <= 1:  # not an echo of the option list
        letter = lead.group(1) or lead.group(2)
        if letter in letters:
            found.append((lead.start(), letter))
    if not found and options:
        norm = [normalise(o) for o in options]
        for m in _COMMIT_TEXT.finditer(text):
            said = normalise(m.group(1))
            if said in norm:
                found.append((m.start(), letters[norm.index(said)]))
                break
    return min(found) if found else None


def _query(text: str) -> tuple[int, str] | None:
    """``(position, query)`` of the first query in ``text``."""
    found = []
    for pattern in (_QUERY_QUOTED, _QUERY_LINE):
        m = pattern.search(text)
        if m and m.group(1).strip(" \"'“”"):
            found.append((m.start(), m.group(1).strip(" \"'“”")))
    if found:
        return min(found)
    sentences = list(_QUESTION_SENTENCE.finditer(text))
    if sentences:
        last = sentences[-1]
        return last.start(1), last.group(1).strip()
    return None


def parse_action(text: str, letters: Sequence[str], options: Sequence[str] = ()) -> Action:
    """The action in a reasoner's output (see the module docstring for the rules)."""
    cut = _HALLUCINATED.search(text)
    body = text[: cut.start()] if cut else text
    commit = _commit(body, letters, options)
    query = _query(body)
    note = "dropped a hallucinated assistant reply" if cut else ""
    if commit is not None and (query is None or commit[0] <= query[0]):
        return Action("commit", letter=commit[1], thought=body[: commit[0]].strip(), note=note)
    if query is not None:
        return Action("query", query=query[1], thought=body[: query[0]].strip(), note=note)
    return Action("none", thought=body.strip(), note=(note + "; " if note else "") + "unparsed")


def parse_letter(text: str, letters: Sequence[str], options: Sequence[str] = ()) -> str | None:
    """The option a direct (VLM) answer names: a commit phrase, a leading letter (``B``,
    ``(B)``, ``B.``), or an option's exact text."""
    commit = _commit(text, letters, options)
    if commit is not None:
        return commit[1]
    m = re.match(r"\s*[*(\[]*\s*([A-J])\s*(?:$|[.):\]])", text)
    if m and m.group(1) in letters:
        return m.group(1)
    said = normalise(text)
    for letter, option in zip(letters, options, strict=False):
        if said == normalise(option):
            return letter
    return None
