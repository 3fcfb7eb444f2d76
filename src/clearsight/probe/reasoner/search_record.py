"""A UoT search's tree as stored with the turn that asked
(:attr:`~clearsight.probe.transcript.Turn.search`): the typed JSON of its settings, candidate
questions, simulated outcomes and the update from the real reply
(:mod:`clearsight.probe.reasoner.uot_search` builds it), so the record, its read-out and the
report read one shape."""

from __future__ import annotations

from typing import NotRequired, TypedDict

__all__ = ["CandidateJson", "OutcomeJson", "SearchRecord", "SettingsJson", "UpdateJson"]


class OutcomeJson(TypedDict):
    """An :class:`~clearsight.probe.reasoner.uot_search.Outcome` as stored."""

    reply: str | None
    possible: list[str]
    probability: float
    raw: str
    parsed: bool
    children: list[CandidateJson]


class CandidateJson(TypedDict):
    """A :class:`~clearsight.probe.reasoner.uot_search.Candidate` as stored."""

    question: str
    raw: str
    outcomes: list[OutcomeJson]
    gain: float
    reward: float
    expected: float


class UpdateJson(TypedDict):
    """The partition of the real reply: its ``raw`` text and whether it ``parsed``."""

    raw: str
    parsed: bool


class SettingsJson(TypedDict):
    """:class:`~clearsight.probe.reasoner.uot_search.SearchSettings` as stored with a searched
    turn."""

    depth: int
    candidates: int
    replies: int
    sharpness: float
    max_new_tokens: int
    max_queries: NotRequired[int | None]
    """The stop rule's query budget (absent from turns stored before the stop rule existed)."""
    commit_posterior: NotRequired[float]
    """The stop rule's posterior threshold (absent likewise)."""


class SearchRecord(TypedDict, total=False):
    """A searched turn's tree as stored with it
    (:attr:`~clearsight.probe.transcript.Turn.search`): the search's ``settings``, the options
    possible before, the root ``candidates``, the index of the one asked (``chosen``, absent
    when none parsed), the ``update`` from the real reply, the options possible after, and the
    LLM ``calls`` made."""

    settings: SettingsJson
    possible_before: list[str]
    candidates: list[CandidateJson]
    chosen: int
    update: UpdateJson
    possible_after: list[str]
    calls: int
