"""The probe's read-outs: what each item kind stores beside its raw output, typed.

One shape per item kind, built where the raw output is made and read back by
:mod:`~clearsight.probe.results`:

* a conversation (kind ``probe``): :class:`ConversationReadouts`, the flat summary of its
  transcript (:meth:`~clearsight.probe.transcript.Transcript.readouts`), beside the whole
  transcript as its raw output (:class:`TranscriptJson`, each turn a :class:`TurnJson`);
* a belief probe (``probe.belief``): :class:`BeliefReadouts`, the paper's Fig. 4 numbers of one
  conversation (:func:`~clearsight.probe.posthoc.belief.belief_summary`);
* the query types of a conversation (``probe.qtype``): :class:`QueryTypeReadouts`;
* a build stage-1 question (``probe.build``): :class:`BuildReadouts`, the letters its direct
  answers named and how many were right;
* a judge's u against people's labels (``probe.judges``):
  :class:`JudgeValidationReadouts`; the query-type judge against people's types
  (``probe.qtype-judges``): :class:`QueryTypeValidationReadouts`.

Each is registered as its spec's ``readout_type`` (:mod:`clearsight.probe.specs`). The keys are
the ones these records were always stored with; a key that runs made before it existed lack is
``NotRequired``, so those runs still read.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from clearsight.probe.reasoner.search_record import SearchRecord
from clearsight.probe.sensor import ReplyJson


class TurnJson(TypedDict):
    """A :class:`~clearsight.probe.transcript.Turn` as stored (``search`` only where the
    strategy searched)."""

    index: int
    raw: str
    thought: str
    query: str | None
    reply: ReplyJson | None
    shown_u: int | None
    commit: str | None
    note: str
    search: NotRequired[SearchRecord]


class TranscriptJson(TypedDict):
    """A :class:`~clearsight.probe.transcript.Transcript` as stored: everything, so every
    number is recomputable from it (``meta``: free-form notes such as the item's key, a
    session's source, the reasoner's error)."""

    instance_id: str
    reasoner: str
    strategy: str
    sensor: str
    run: int
    turns: list[TurnJson]
    committed: str | None
    correct: bool
    stop: str
    gold: str
    question: str
    options: list[str]
    dataset: str
    category: str
    k: int
    budget: int
    signal: str
    meta: dict[str, Any]


class ConversationReadouts(TypedDict):
    """One conversation's summary: who reasoned with which strategy, sensor, run and signal,
    about which instance (its dataset, category and the paper's domain), the commit, the gold
    letter and the verdict, why it stopped, rounds, queries, VLM calls received and failed,
    sensor errors, the mean u of the answered queries (None without one) and K."""

    instance_id: str
    reasoner: str
    strategy: str
    sensor: str
    run: int
    signal: str
    dataset: str
    category: str
    domain: str
    committed: str | None
    gold: str
    correct: bool
    stop: str
    rounds: int
    queries: int
    vlm_calls: int
    failed_calls: NotRequired[int]
    sensor_errors: int
    mean_u: float | None
    k: int


class BeliefReadouts(TypedDict):
    """A belief probe's numbers: p_correct(t) = b_t[gold] for every t (None where b_t is
    unparsed), p_chosen = b_T[committed] (None without a commit or a parsed last step), the
    first step with max b_t >= 0.7 (None if never), whether it was reached, the conversation's
    verdict and how many steps were unparsed."""

    p_correct: list[float | None]
    p_chosen: float | None
    steps_to_threshold: int | None
    reached: bool
    correct: bool
    unparsed: NotRequired[int]


class QueryTypeReadouts(TypedDict):
    """Each query's type, in order (None where the judge named none)."""

    types: list[str | None]


class BuildReadouts(TypedDict):
    """A stage-1 question: the letter each direct answer named (None: none), c (how many name
    the gold option) and the instance's id."""

    letters: list[str | None]
    c: int
    id: str


class JudgeValidationReadouts(TypedDict):
    """One judge's u against people's labels of u: the judge and the labels' hash, the
    agreement (:class:`~clearsight.probe.posthoc.agreement.Agreement`: ``n`` replies, exact
    and within-1 shares, mean absolute error, Cohen's kappa plain and quadratic, Pearson) and
    the seconds it took."""

    judge: str
    labels: str
    n: float
    exact: float
    within1: float
    mae: float
    kappa: float
    kappa_quadratic: float
    pearson: float
    seconds: float


class QueryTypeValidationReadouts(TypedDict):
    """The query-type judge against people's types: the judge, its read-out and the labels'
    hash, the agreement (:class:`~clearsight.probe.posthoc.qtypecheck.QueryTypeAgreement`:
    ``n`` queries, the consensus and union match rates, kappa, unparsed) and the seconds it
    took."""

    judge: str
    readout: str
    labels: str
    n: float
    consensus: float
    union: float
    kappa: float
    unparsed: float
    seconds: float
