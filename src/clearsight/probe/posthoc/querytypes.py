"""The types of a conversation's queries, from an LLM judge (the paper's Table 3, App. H).

Each query is Descriptive, Targeted, Contrastive, Confirmatory or Comparative
(:data:`QUERY_TYPES`). :func:`classify_queries` asks the judge for each, given the question,
the query, its round and the earlier queries: ``judge``, the paper's, has it write a rationale
and a JSON label with a confidence (read forgivingly, :func:`parse_query_judgement`);
``scores``, the cheap option, takes the type names' candidate probabilities where the backend
scores candidates. :func:`query_type_table` is Table 3: each type's share in round 1 and in
rounds 2+ (rounds counted by query), averaged over datasets — by default over the paper's
population, one BP trial per reasoner (:func:`one_trial`), pooled over every conversation as
an option. The runs themselves are post-hoc items (:mod:`clearsight.probe.posthoc.protocol`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, NotRequired, TypedDict

import numpy as np
import pandas as pd

from clearsight.probe.reasoner.prompts import prompts
from clearsight.probe.transcript import Transcript
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend, Request, Response

#: The query types, in the paper's order.
QUERY_TYPES: Final[tuple[str, ...]] = (
    "Descriptive",
    "Targeted",
    "Contrastive",
    "Confirmatory",
    "Comparative",
)


class QueryJudgement(TypedDict):
    """The judge's reply read: the ``type`` (None: none named), its ``confidence`` (None: none
    stated), the ``rationale`` before the label and how it was ``parsed`` (``json``, ``name``
    or None)."""

    type: str | None
    confidence: float | None
    rationale: str | None
    parsed: str | None


class ClassifiedQuery(TypedDict):
    """One query as stored (the raw output of a query-type item): its round, the query, its
    type; with the ``judge`` read-out also the judgement and the judge's whole reply
    (``text``), with ``scores`` the type names' candidate probabilities."""

    round: int
    query: str
    type: str | None
    confidence: NotRequired[float | None]
    rationale: NotRequired[str | None]
    parsed: NotRequired[str | None]
    text: NotRequired[str]
    scores: NotRequired[dict[str, float]]


def parse_query_type(text: str) -> str | None:
    """The first query type named in ``text`` (case-insensitive), or None."""
    found = [(m.start(), t) for t in QUERY_TYPES if (m := re.search(t, text, re.I))]
    return min(found)[1] if found else None


#: How the judge's query types are read: ``judge`` (the paper's: a one-sentence rationale and a
#: JSON label with a confidence, generated) or ``scores`` (the cheap option: the five type
#: names' candidate probabilities where the backend scores candidates).
QueryReadout = Literal["judge", "scores"]
QUERY_READOUTS: Final[tuple[str, ...]] = ("judge", "scores")
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")


def parse_query_judgement(text: str) -> QueryJudgement:
    """The judge's reply read forgivingly: the last JSON object holding a ``type`` that names one
    of :data:`QUERY_TYPES` (any case) gives ``type`` and ``confidence`` (a number in [0, 1], or a
    percentage above 1 divided by 100; None when absent or unusable) and ``parsed = "json"``,
    the text before it the ``rationale``; without one, the first type named anywhere
    (``parsed = "name"``, no confidence); else ``type`` None (``parsed`` None: recorded, not
    guessed)."""
    for match in reversed(list(_JSON_OBJECT.finditer(text))):
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            continue
        kind = str(obj.get("type")).lower() if isinstance(obj, dict) else ""
        named = next((t for t in QUERY_TYPES if kind == t.lower()), None)
        if named is None:
            continue
        return {
            "type": named,
            "confidence": _confidence(obj.get("confidence")),
            "rationale": text[: match.start()].strip() or None,
            "parsed": "json",
        }
    named_only = parse_query_type(text)
    parsed = None if named_only is None else "name"
    return {"type": named_only, "confidence": None, "rationale": None, "parsed": parsed}


def _confidence(value: Any) -> float | None:
    """A stated confidence as a probability (None when it is not a finite number in [0, 100])."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        return None
    v = float(value)
    v = v / 100.0 if 1.0 < v <= 100.0 else v
    return v if 0.0 <= v <= 1.0 else None


def _query_request(transcript: Transcript, n: int, judged: bool, scored: bool) -> Request:
    """The request classifying query ``n`` (0-based) of the conversation, given the question,
    the query, its round and the earlier queries."""
    queries = [(t.index, t.query) for t in transcript.turns if t.query is not None]
    rnd, query = queries[n]
    earlier = [q for _, q in queries[:n]]
    return query_request(transcript.question, earlier, rnd, query, judged, scored)


def query_request(
    question: str, earlier: Sequence[str], rnd: int, query: str, judged: bool, scored: bool
) -> Request:
    """The request asking the judge for the type of ``query``, asked in round ``rnd`` of a
    conversation about ``question`` after the ``earlier`` queries (``judged``: the paper's
    judge prompt; ``scored``: the type names as candidates to score)."""
    from clearsight.models.base import Decoding, Message, Request, TextPart

    qt = prompts()["strategies"]["query_type_judge" if judged else "query_type"]
    previous = "; ".join(earlier) or "(none)"
    text = qt["ask"].format(question=question, previous=previous, round=rnd, query=query)
    return Request(
        (Message("system", (TextPart(qt["system"]),)), Message.user(text)),
        Decoding(max_new_tokens=96 if judged else 6),
        candidates=QUERY_TYPES if scored else (),
        generate=not scored,
    )


def classified(rnd: int, query: str, response: Response, judged: bool) -> ClassifiedQuery:
    """One query's type as the judge's ``response`` gives it (see :func:`classify_queries`)."""
    reply = response.texts[0] if response.texts else ""
    if judged:
        said = parse_query_judgement(reply)
        return {
            "round": rnd,
            "query": query,
            "type": said["type"],
            "confidence": said["confidence"],
            "rationale": said["rationale"],
            "parsed": said["parsed"],
            "text": reply,
        }
    scores = {k: float(v) for k, v in (response.candidate_probs or {}).items()}
    if scores:
        kind: str | None = max(QUERY_TYPES, key=lambda t: scores.get(t, 0.0))
    else:
        kind = parse_query_type(reply)
    return {"round": rnd, "query": query, "type": kind, "scores": scores}


def classify_queries(
    transcript: Transcript, backend: Backend, readout: QueryReadout = "judge"
) -> list[ClassifiedQuery]:
    """Each query of the conversation with its round and the type the LLM judge assigns, given
    the MCQ question, the query, its round and the earlier queries (the paper's App. H).
    ``judge``: the judge writes a rationale and a JSON label with its confidence
    (:func:`parse_query_judgement`; the reply kept as ``text``); ``scores``: the highest
    candidate probability of the five names where the backend scores candidates (``scores``
    kept), else the first name in its generated text."""
    from clearsight.models.replies import complete_checked

    if readout not in QUERY_READOUTS:
        raise InputError(f"query-type read-out {readout!r}: one of {', '.join(QUERY_READOUTS)}")
    judged = readout == "judge"
    scored = not judged and backend.capabilities.candidate_probs
    queries = [(t.index, t.query) for t in transcript.turns if t.query is not None]
    requests = [_query_request(transcript, n, judged, scored) for n in range(len(queries))]
    responses = complete_checked(backend, requests) if requests else []
    return [
        classified(rnd, query, response, judged)
        for (rnd, query), response in zip(queries, responses, strict=True)
    ]


#: The strategy of the paper's Table 3 (people's sessions are its human rows).
TABLE3_STRATEGIES: Final[tuple[str, ...]] = ("bp", "human")


def one_trial(rows: pd.DataFrame) -> pd.DataFrame:
    """The queries of the paper's Table 3 population (App. H: "one trial each" of the people
    and of each reasoner with BP): per reasoner, its BP conversations (a person's sessions)
    of its first run with the true consistency signal shown, with its first sensor (in name
    order) — not its ReAct or UoT queries, other runs, sensors or ablation signals."""
    if rows.empty:
        return rows
    mine = rows[rows["strategy"].isin(TABLE3_STRATEGIES) & (rows["signal"] == "true")]
    first = mine.groupby("reasoner")[["run", "sensor"]].transform("min")
    return mine[(mine["run"] == first["run"]) & (mine["sensor"] == first["sensor"])]


def query_type_table(rows: pd.DataFrame, pooled: bool = False) -> pd.DataFrame:
    r"""Table 3: share (percent) of each query type in round 1 and in rounds 2+, per reasoner,
    **averaged over datasets** (the paper's, over SeedBench and CVQA), over one BP trial per
    reasoner (:func:`one_trial`), or over every query (``pooled``: every strategy, run,
    sensor and signal).

    ``rows``: one row per query with reasoner, dataset, round (counted by query: a
    conversation's first query is round 1) and type. With :math:`s_{d}(y)` the share of type
    y among the reasoner's queries of the phase on dataset d, the table holds
    :math:`\frac{1}{|D|} \sum_{d \in D} s_d(y)` over the datasets D where the reasoner asked
    in that phase (each dataset counts once whatever its number of queries; a type never
    judged there counts 0). ``datasets``: how many were averaged; ``queries``: how many
    queries there were in all."""
    rows = rows if pooled else one_trial(rows)
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(phase=np.where(rows["round"] == 1, "round 1", "round 2+"))
    counts = rows.groupby(["reasoner", "phase", "dataset", "type"]).size()
    shares = counts / counts.groupby(level=[0, 1, 2]).transform("sum") * 100
    per_dataset = shares.unstack("type").reindex(columns=list(QUERY_TYPES)).fillna(0.0)
    table = per_dataset.groupby(level=[0, 1]).mean()
    table["datasets"] = per_dataset.groupby(level=[0, 1]).size()
    table["queries"] = rows.groupby(["reasoner", "phase"]).size()
    return table.reset_index()
