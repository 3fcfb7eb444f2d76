"""A probe run's post-hoc belief probes as items of ``clearsight view`` (kind ``probe.belief``:
``clearsight probe analyse``'s replay of a finished conversation, eliciting the belief over the
options after each sensor reply).

* **a belief probe's page** (:func:`belief_detail`): the conversation's question and options,
  the last belief b_T as bars (the committed option and the gold marked), then b_t after each
  reply as a chart (step 0 the uniform prior; an unparsed step has no bars), with how each was
  read and the text it was read from; p_correct over the steps, p_chosen, the step that first
  reached the threshold;
* **a conversation's probes** (:func:`beliefs_of`): the conversation and every belief probe of
  it, a :class:`~clearsight.faces.viewing.Related` group its page (and each probe's) links to.
  They are found by one read of the run's belief-probe specs (one per conversation, judge and
  read-out).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from clearsight.faces.viewing import Bar, Chart, Detail, Member, Related, Section, Span
from clearsight.probe.specs import BELIEF_PROTOCOL, PROTOCOL
from clearsight.store import RunStore, StoredRecord

__all__ = ["belief_detail", "belief_page", "beliefs_of"]


def _bars(
    belief: Mapping[str, float] | None, options: Sequence[str], gold: Any, committed: Any
) -> tuple[Bar, ...]:
    """One belief over the options as bars (no probability where it is unparsed)."""
    letters = [chr(ord("A") + i) for i in range(len(options))]
    return tuple(
        Bar(
            f"({letter}) {option}",
            None if belief is None else float(belief.get(letter, 0.0)),
            letter == committed,
            letter == gold,
        )
        for letter, option in zip(letters, options, strict=True)
    )


def _number(value: Any) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def belief_detail(found: StoredRecord, conversation: Mapping[str, Any]) -> Detail:
    """A belief probe's page (module docstring); ``conversation``: its conversation's raw
    record (question, options, gold, commitment)."""
    trace, out = found.raw or {}, found.readouts
    options, gold = list(conversation.get("options") or []), conversation.get("gold")
    committed = conversation.get("committed")
    beliefs = list(trace.get("beliefs") or [])
    methods, texts = list(trace.get("methods") or []), list(trace.get("texts") or [])
    charts = tuple(
        Chart(f"b_{t} after turn {turn} ({method})", _bars(belief, options, gold, committed))
        for t, (belief, method, turn) in enumerate(
            zip(beliefs, methods, trace.get("turns") or [], strict=False)
        )
    )
    spans = tuple(Span(text, f"step {t}") for t, text in enumerate(texts) if text)
    labels = {"record": "belief probe", "judge": str(found.spec.get("judge", ""))}
    labels |= {"readout": str(found.spec.get("readout") or "letters")}
    labels |= {"conversation": str(found.spec.get("transcript", ""))[:12], "gold": str(gold)}
    names = ("p_chosen", "steps_to_threshold", "reached", "correct", "unparsed")
    values = {name: _number(out.get(name)) for name in names}
    values["p_correct"] = " · ".join(_number(p) or "-" for p in out.get("p_correct") or [])
    return Detail(
        key=found.key,
        labels=labels,
        prompt=str(conversation.get("question", "")),
        bars=_bars(beliefs[-1] if beliefs else None, options, gold, committed),
        values=values,
        raw_text=json.dumps(trace, indent=1, default=str),
        sections=(Section("What the belief was read from", spans),) if spans else (),
        charts=charts,
        image=False,
    )


def belief_page(run_dir: Path, key: str) -> Detail | None:
    """The page of ``key`` where it is an ok belief probe of a stored conversation."""
    with RunStore.open(run_dir, read_only=True) as store:
        found = store.record(key)
        if found is None or found.protocol != BELIEF_PROTOCOL or found.status != "ok":
            return None
        conversation = store.record(str(found.spec.get("transcript", "")))
    raw = conversation.raw if conversation is not None else None
    return belief_detail(found, raw if isinstance(raw, Mapping) else {})


def beliefs_of(run_dir: Path, key: str) -> Related | None:
    """The conversation of ``key`` (a conversation or one of its belief probes) and its
    belief probes (module docstring); None where it has none."""
    with RunStore.open(run_dir, read_only=True) as store:
        found = store.record(key)
        if found is None or found.protocol not in (PROTOCOL, BELIEF_PROTOCOL):
            return None
        conversation = key if found.protocol == PROTOCOL else str(found.spec.get("transcript"))
        members = [
            Member(f"belief · {r.spec.get('judge')} · {r.spec.get('readout') or 'letters'}", r.key)
            for r in store.iter_records("ok", kind=BELIEF_PROTOCOL, raw=False)
            if r.spec.get("transcript") == conversation
        ]
    if not members:
        return None
    title = f"Conversation {conversation[:12]} and its belief probes"
    return Related("beliefs", title, (Member("conversation", conversation), *members))
