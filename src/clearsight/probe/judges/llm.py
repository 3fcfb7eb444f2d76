"""The LLM judge of semantic equivalence (``llm:<model spec>``), the paper's kind of aggregator,
asked as a pairwise yes/no question (clearsight's wording, prompt ``prompts/judge.yaml``) to any
backend, comparing the
probabilities of "Yes" and "No" where the backend scores candidates, else parsing the generated
word. One of the judges :func:`clearsight.probe.judges.make_judge` makes by name."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from clearsight.models.base import Backend

__all__ = ["LLMJudge", "judge_prompt", "parse_yes_no"]


@functools.cache
def judge_prompt() -> tuple[str, str]:
    """``(id, text)`` of the pairwise judge prompt (``prompts/judge.yaml``)."""
    text = resources.files("clearsight.probe").joinpath("prompts/judge.yaml").read_text()
    doc = yaml.safe_load(text)
    return str(doc["id"]), str(doc["text"])


_YES = re.compile(r"\b(yes|same|equivalent)\b", re.I)
_NO = re.compile(r"\b(no|not|different)\b", re.I)


def parse_yes_no(text: str) -> bool | None:
    """True for a reply that starts with yes, False for no, None when it says neither."""
    words = text.strip().lower()
    for word in re.findall(r"[a-z]+", words)[:3]:
        if word == "yes":
            return True
        if word == "no":
            return False
    yes, no = _YES.search(words), _NO.search(words)
    if yes and not no:
        return True
    if no and not yes:
        return False
    return None


class LLMJudge:
    """The pairwise yes/no judge on any backend (one batched call per :meth:`equivalent`)."""

    def __init__(self, backend: Backend, spec: str = "") -> None:
        self.backend = backend
        self._spec = spec or backend.name

    @property
    def name(self) -> str:
        """``llm:<model>``."""
        return f"llm:{self._spec}"

    def equivalent(self, pairs: Sequence[tuple[str, str]], question: str = "") -> list[bool]:
        """Ask the backend about each pair; "Yes" wins over "No" by probability where the
        backend scores candidates, else by the generated word (unparseable counts as No)."""
        from clearsight.models.base import Decoding, Message, Request
        from clearsight.models.replies import complete_checked

        if not pairs:
            return []
        _, text = judge_prompt()
        scores = self.backend.capabilities.candidate_probs
        requests = [
            Request(
                (Message.user(text.format(question=question or "(not given)", a=a, b=b)),),
                Decoding(max_new_tokens=4),
                candidates=("Yes", "No") if scores else (),
                generate=not scores,
            )
            for a, b in pairs
        ]
        out = []
        replies = complete_checked(self.backend, requests)
        for (a, b), response in zip(pairs, replies, strict=True):
            if a == b:
                out.append(True)
            elif scores and response.candidate_probs:
                probs = response.candidate_probs
                out.append(float(probs.get("Yes", 0.0)) > float(probs.get("No", 0.0)))
            else:
                out.append(bool(parse_yes_no(response.texts[0] if response.texts else "")))
        return out
