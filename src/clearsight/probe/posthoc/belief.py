"""The belief probe: the reasoner's distribution over the options after each sensor reply.

The paper's Fig. 4 and Table 7 (docs/methods.md §6, App. I). :func:`belief_probe` replays a
finished conversation with the assessment prompt and elicits b_t after each reply (b_0
uniform): ``stated``, the paper's, has the conversation's own reasoner write the distribution
with its next reasoning step in context (parsed forgivingly, :func:`parse_distribution`);
``letters``, the cheap read-out of earlier runs, takes a judge's next-token probabilities of the
option letters. :func:`belief_summary` gives one conversation's numbers (p_correct(t),
p_chosen, steps to max b >= 0.7), :func:`belief_table` Table 7 over many, and
:func:`belief_curves` the traces and means Fig. 4 draws, both per reasoner, sensor and signal
(:data:`BELIEF_SETTING`: the ablation's signals and another sensor are populations of their
own) or pooled per reasoner. The runs themselves are
post-hoc items (:mod:`clearsight.probe.posthoc.protocol`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypedDict

import numpy as np
import pandas as pd

from clearsight.probe.instances import Instance
from clearsight.probe.readouts import BeliefReadouts
from clearsight.probe.reasoner.prompts import chat, prompts
from clearsight.probe.transcript import Transcript
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend, Request

#: The belief a conversation must reach (max b_t) to count as converged (Table 7).
BELIEF_THRESHOLD: Final = 0.7

#: The columns a belief-probe population is split by (Fig. 4, Table 7): one reasoner's
#: conversations with one sensor and one consistency signal, so the ablation's none and random
#: u and another sensor are populations of their own; pooled, by reasoner only.
BELIEF_SETTING: Final = ("reasoner", "sensor", "signal")


def setting_columns(rows: pd.DataFrame, pooled: bool = False) -> list[str]:
    """The columns of :data:`BELIEF_SETTING` (only ``reasoner`` when ``pooled``) that
    ``rows`` holds."""
    wanted = BELIEF_SETTING[:1] if pooled else BELIEF_SETTING
    return [c for c in wanted if c in rows]


def setting_names(rows: pd.DataFrame, pooled: bool = False) -> list[str]:
    """Each row's population as Fig. 4's legend names it: ``reasoner, sensor S, signal u``
    (``all`` for rows without a reasoner)."""
    columns = setting_columns(rows, pooled)
    if not columns:
        return ["all"] * len(rows)
    names = rows[columns[0]].astype(str)
    for column in columns[1:]:
        names = names + f", {column} " + rows[column].astype(str)
    return names.tolist()


class TraceJson(TypedDict):
    """A :class:`BeliefTrace` as stored (the raw output of a belief-probe item)."""

    beliefs: list[dict[str, float] | None]
    methods: list[str]
    texts: list[str]
    turns: list[int]


_PROB = re.compile(r"\(?\b([A-J])\)?\s*[:=]\s*([01](?:\.\d+)?|\.\d+|\d{1,3}\s*%)")


def parse_distribution(text: str, letters: Sequence[str]) -> dict[str, float] | None:
    """``A=0.4, B: 30%, ...`` -> a distribution over ``letters`` (normalised; letters not
    mentioned get 0); None when nothing usable is found."""
    found: dict[str, float] = {}
    for letter, value in _PROB.findall(text):
        if letter in letters and letter not in found:
            v = float(value.rstrip("% ")) / (100 if "%" in value else 1)
            found[letter] = v
    total = sum(found.values())
    if not found or total <= 0:
        return None
    return {k: found.get(k, 0.0) / total for k in letters}


#: How the belief probe reads b_t: ``stated`` (the paper's App. I: the conversation's own
#: reasoner, its next reasoning step in context, writes the distribution, parsed forgivingly) or
#: ``letters`` (the cheap option of earlier runs: a judge's next-token probabilities of the
#: option letters where its backend scores candidates, the context ending at the reply).
BeliefReadout = Literal["stated", "letters"]
BELIEF_READOUTS: Final[tuple[str, ...]] = ("stated", "letters")


@dataclass(frozen=True)
class BeliefTrace:
    """The beliefs b_0..b_n of one conversation (b_0 uniform; b_t after the t-th sensor
    reply), how each was obtained (``uniform`` for b_0, ``parsed`` text, ``letter-probs``,
    ``uniform`` fallback of the letter read-out, or ``unparsed``: no distribution found, b_t
    None, recorded rather than guessed), the text each step generated and the index of the
    turn whose reply it follows (0 for b_0)."""

    beliefs: tuple[Mapping[str, float] | None, ...]
    methods: tuple[str, ...]
    texts: tuple[str, ...] = ()
    turns: tuple[int, ...] = ()

    def to_json(self) -> TraceJson:
        """JSON-able dict."""
        return {
            "beliefs": [None if b is None else dict(b) for b in self.beliefs],
            "methods": list(self.methods),
            "texts": list(self.texts),
            "turns": list(self.turns),
        }


def _replay_instance(transcript: Transcript) -> tuple[Instance, tuple[str, ...]]:
    """The instance a transcript was about (without its image) and its option letters."""
    letters = tuple("ABCDEFGHIJ"[: len(transcript.options)])
    if not letters:
        raise InputError(f"transcript of {transcript.instance_id} has no options")
    instance = Instance(
        transcript.instance_id,
        "",
        transcript.question or "?",
        transcript.options,
        transcript.gold or letters[0],
        transcript.dataset,
        transcript.category,
    )
    return instance, letters


def next_reasoning_step(transcript: Transcript, i: int) -> str | None:
    """The reasoner's chain of thought after the reply of turn ``i`` (0-based): the next
    turn's thought, the text before its action (its whole text when it wrote nothing before
    the action); None when no turn follows."""
    if i + 1 >= len(transcript.turns):
        return None
    after = transcript.turns[i + 1]
    return after.thought or after.raw


def _belief_request(
    transcript: Transcript,
    i: int,
    instance: Instance,
    readout: BeliefReadout,
    scored: bool,
    max_new_tokens: int,
) -> Request:
    """The request eliciting b_t after the reply of turn ``i`` (see :func:`belief_probe`)."""
    from clearsight.models.base import Decoding, Message, Request, TextPart

    assess = prompts()["strategies"]["assess"]
    letters = instance.letters
    budget = max(transcript.budget, len(transcript.turns) + 2)
    messages = chat(
        instance,
        transcript.turns[: i + 1],
        system=assess["system"],
        budget=budget,
        signal="true",
        k=transcript.k,
    )
    ask = Message.user(assess["ask"].format(letters=", ".join(letters)))
    thought = next_reasoning_step(transcript, i) if readout == "stated" else None
    if thought is not None:
        messages.append(Message("assistant", (TextPart(thought),)))
        messages.append(ask)
    else:
        messages[-1] = Message.user(messages[-1].text + "\n" + ask.text)
    return Request(
        tuple(messages),
        Decoding(max_new_tokens=max_new_tokens),
        candidates=letters if scored else (),
        generate=not scored,
    )


def belief_probe(
    transcript: Transcript,
    backend: Backend,
    *,
    readout: BeliefReadout = "stated",
    max_new_tokens: int = 60,
) -> BeliefTrace:
    r"""Replay ``transcript`` with the assessment prompt in place of the strategy's system
    prompt and elicit the belief b_t after each sensor reply; b_0 is uniform.

    ``stated`` (the paper's App. I, Eq. 4): ``backend`` is the conversation's own reasoner;
    the context of step t is :math:`[p_{assess}, h_1, h_2, h_3, \dots, h_{2t}, h_{2t+1}]`,
    the question, the exchanges up to the t-th reply and the reasoner's next chain of thought
    (:func:`next_reasoning_step`; none after the last reply when no turn follows), then the
    request for a distribution; the generated ``A=0.4, B: 30%, ...`` is parsed by
    :func:`parse_distribution`, and a step with none is ``unparsed`` (b_t None).
    ``letters``: the earlier cheap read-out — the context ends at the reply, and where the
    backend scores candidates b_t is the normalised next-token probability of each letter,
    else parsed from the text, else uniform."""
    from clearsight.models.replies import complete_checked

    if readout not in BELIEF_READOUTS:
        raise InputError(f"belief read-out {readout!r}: one of {', '.join(BELIEF_READOUTS)}")
    instance, letters = _replay_instance(transcript)
    steps = [i for i, t in enumerate(transcript.turns) if t.reply is not None]
    scored = readout == "letters" and backend.capabilities.candidate_probs
    requests = [
        _belief_request(transcript, i, instance, readout, scored, max_new_tokens) for i in steps
    ]
    responses = complete_checked(backend, requests) if requests else []
    uniform = {k: 1 / len(letters) for k in letters}
    beliefs: list[Mapping[str, float] | None] = [uniform]
    methods, texts = ["uniform"], [""]
    for response in responses:
        text = response.texts[0] if response.texts else ""
        texts.append(text)
        belief, method = _read_belief(text, response.candidate_probs, letters, readout)
        beliefs.append(belief)
        methods.append(method)
    turns = (0, *(transcript.turns[i].index for i in steps))
    return BeliefTrace(tuple(beliefs), tuple(methods), tuple(texts), turns)


def _read_belief(
    text: str,
    probs: Mapping[str, float] | None,
    letters: Sequence[str],
    readout: BeliefReadout,
) -> tuple[Mapping[str, float] | None, str]:
    """One step's belief and how it was read (see :func:`belief_probe`)."""
    parsed = parse_distribution(text, letters)
    if parsed is not None:
        return parsed, "parsed"
    if readout == "stated":
        return None, "unparsed"
    total = sum(float((probs or {}).get(k, 0.0)) for k in letters)
    if probs and total > 0:
        return {k: float(probs.get(k, 0.0)) / total for k in letters}, "letter-probs"
    return {k: 1 / len(letters) for k in letters}, "uniform"


def belief_summary(transcript: Transcript, trace: BeliefTrace) -> BeliefReadouts:
    """The paper's Fig. 4 numbers of one conversation: p_correct(t) = b_t[gold] for every t
    (None where b_t is unparsed), p_chosen = b_T[committed] at the last step (None without a
    commit or when that step is unparsed), the first step t >= 1 with max b_t >= 0.7 (None if
    never), whether it was reached, and how many steps were unparsed."""
    p_correct = [None if b is None else float(b.get(transcript.gold, 0.0)) for b in trace.beliefs]
    last = trace.beliefs[-1]
    chosen = transcript.committed
    p_chosen = None if chosen is None or last is None else float(last.get(chosen, 0.0))
    reach = next(
        (
            t
            for t, b in enumerate(trace.beliefs)
            if t >= 1 and b is not None and max(b.values()) >= BELIEF_THRESHOLD
        ),
        None,
    )
    return {
        "p_correct": p_correct,
        "p_chosen": p_chosen,
        "steps_to_threshold": reach,
        "reached": reach is not None,
        "correct": transcript.correct,
        "unparsed": sum(b is None for b in trace.beliefs),
    }


def belief_table(rows: pd.DataFrame, pooled: bool = False) -> pd.DataFrame:
    """Table 7 analogue: per reasoner, sensor, signal (:data:`BELIEF_SETTING`; ``pooled``:
    per reasoner only) and dataset, split by final correctness, the mean steps to max b >= 0.7
    (over conversations that reach it), the reach rate, mean p_chosen and mean final p_correct.
    ``rows``: one row per probed conversation with the columns of :func:`belief_summary` plus
    reasoner and dataset (and sensor and signal where known)."""
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(
        outcome=np.where(rows["correct"], "correct", "wrong"),
        final_p_correct=rows["p_correct"].map(lambda p: np.nan if p[-1] is None else p[-1]),
        p_chosen=pd.to_numeric(rows["p_chosen"], errors="coerce"),
        steps_to_threshold=pd.to_numeric(rows["steps_to_threshold"], errors="coerce"),
    )
    table = (
        rows.groupby([*setting_columns(rows, pooled), "dataset", "outcome"])
        .agg(
            conversations=("reached", "size"),
            steps=("steps_to_threshold", "mean"),
            reach=("reached", "mean"),
            p_chosen=("p_chosen", "mean"),
            final_p_correct=("final_p_correct", "mean"),
        )
        .reset_index()
    )
    table["reach"] *= 100
    return table


def anchoring_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Early anchoring and convergence speed per population (reasoner, sensor, signal:
    :data:`BELIEF_SETTING`) and dataset, from the belief-probe rows of :func:`belief_table`.

    * ``anchored`` (%): the paper's early-anchoring share (§4.4: "46% of its SeedBench
      trajectories already exceed 0.7 confidence after the first evidence step"): the share of
      probed conversations whose max_i b_1[i] reaches the threshold at the first sensor reply,
      i.e. whose steps to max b >= 0.7 is 1. clearsight's reading: ">= 0.7", Table 7's threshold,
      where the sentence says "exceed"; every probed conversation counts in the denominator (an
      unparsed b_1 is not anchored).
    * ``steps``: mean steps to max b >= 0.7 over the conversations that reach it, correct and
      wrong together.
    * ``speed``: the paper's speed ratio ("reaches high confidence roughly 1.6x faster than the
      122B model", Table 7's steps): the ``steps`` of the dataset's slowest population over this
      population's, so the slowest reads 1 and one twice as fast 2. clearsight's reading: the
      paper compares two reasoners and does not say how it pools correct and wrong
      conversations; here each population is set beside the slowest of its dataset, over its
      conversations pooled.
    """
    if rows.empty or "steps_to_threshold" not in rows:
        return pd.DataFrame()
    steps = pd.to_numeric(rows["steps_to_threshold"], errors="coerce")
    rows = rows.assign(steps=steps, anchored=steps.eq(1) * 100.0)
    keys = [*setting_columns(rows), "dataset"]
    table = (
        rows.groupby(keys)
        .agg(
            conversations=("steps", "size"), anchored=("anchored", "mean"), steps=("steps", "mean")
        )
        .reset_index()
    )
    slowest = table.groupby("dataset")["steps"].transform("max")
    table["speed"] = slowest / table["steps"]
    return table


@dataclass(frozen=True)
class BeliefCurve:
    """One probed conversation in Fig. 4: its population (:func:`setting_names`), whether it
    committed right, its p_correct(t) for t = 0..n (NaN where b_t is unparsed) and p_chosen
    (None: none)."""

    setting: str
    correct: bool
    p_correct: tuple[float, ...]
    p_chosen: float | None


@dataclass(frozen=True)
class BeliefCurves:
    """Fig. 4's data: every probed conversation's curve, and per population (reasoner, sensor
    and signal; pooled: reasoner) the mean p_correct(t) over its conversations with a parsed
    b_t (NaN where none has one)."""

    curves: tuple[BeliefCurve, ...]
    means: Mapping[str, tuple[float, ...]]


def _mean_curve(traces: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """The mean of ``traces`` at each step over those that have a number there."""
    width = max(len(t) for t in traces)
    grid = np.full((len(traces), width), np.nan)
    for r, t in enumerate(traces):
        grid[r, : len(t)] = t
    counts = np.sum(~np.isnan(grid), axis=0)
    mean = np.nansum(grid, axis=0) / np.maximum(counts, 1)
    mean[counts == 0] = np.nan
    return tuple(float(v) for v in mean)


def belief_curves(beliefs: pd.DataFrame, pooled: bool = False) -> BeliefCurves:
    """Fig. 4's curves from the belief-probe rows (columns p_correct, correct, and where
    present p_chosen, reasoner, sensor and signal), a mean per population
    (:func:`setting_names`; ``pooled``: per reasoner; rows without reasoners: ``all``)."""
    if beliefs.empty or "p_correct" not in beliefs:
        return BeliefCurves((), {})
    who = setting_names(beliefs, pooled)
    chosen = beliefs["p_chosen"] if "p_chosen" in beliefs else pd.Series([None] * len(beliefs))
    curves = tuple(
        BeliefCurve(
            name,
            bool(right),
            tuple(np.nan if v is None else float(v) for v in p),
            None if p_chosen is None or pd.isna(p_chosen) else float(p_chosen),
        )
        for p, right, p_chosen, name in zip(
            beliefs["p_correct"], beliefs["correct"], chosen, who, strict=True
        )
    )
    means = {
        name: _mean_curve([c.p_correct for c in curves if c.setting == name])
        for name in sorted({c.setting for c in curves})
    }
    return BeliefCurves(curves, means)
