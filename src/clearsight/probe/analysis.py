"""Analysis of probe transcripts: the paper's Tables 1, 3, 7, 9 and Figures 2-4.

Everything here is recomputed from stored transcripts (models and humans alike), never from
anything the run kept aside:

* :func:`cross_run` — docs/methods.md §6 cross-run calibration: per instance and setting,
  prediction = the most common committed option over the R runs (ties to the earliest run;
  runs that committed nothing do not vote), confidence = share of the R runs that committed
  that option, correct = prediction equals gold. :func:`summary_table` adds accuracy mean and
  standard deviation over runs, cross-run ECE (``clearsight.metrics.ece``, 10 right-closed
  bins), the AURC and E-AURC of that confidence gating the predictions
  (``clearsight.metrics.risk_coverage``), rounds and VLM calls per instance (Table 9, Table
  11); :func:`domain_table` is Table 1: each domain the macro-average of its datasets.
* :func:`sensor_consistency` / :func:`consistency_bins` — accuracy by the sensor's own
  consistency c on the instance (how many direct answers were right; Fig. 2).
* :func:`ablation_table` — accuracy with the true, no and random consistency signal (Fig. 3).
* :func:`belief_probe` / :func:`belief_table` — replay a conversation and elicit the
  reasoner's distribution over the options after each sensor reply (b_0 uniform): p_correct(t),
  p_chosen at the end, steps to max b >= 0.7 and the reach rate (Fig. 4, Table 7).
* :func:`classify_queries` / :func:`query_type_table` — each query's type (Descriptive,
  Targeted, Contrastive, Confirmatory, Comparative) from an LLM judge (a rationale and a JSON
  label with a confidence, as the paper's App. H; the type names' scores as the cheap option);
  shares in round 1 and rounds 2+ (Table 3).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import pandas as pd

from clearsight.metrics.calibration import ece
from clearsight.metrics.crossrun import cross_run_prediction
from clearsight.metrics.selective import risk_coverage
from clearsight.probe.transcript import Transcript
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend

SETTING: Final[tuple[str, ...]] = ("reasoner", "strategy", "sensor", "signal")
QUERY_TYPES: Final[tuple[str, ...]] = (
    "Descriptive",
    "Targeted",
    "Contrastive",
    "Confirmatory",
    "Comparative",
)
BELIEF_THRESHOLD: Final = 0.7


def transcripts_frame(transcripts: Iterable[Transcript]) -> pd.DataFrame:
    """One row per transcript: its read-outs (reasoner, strategy, sensor, signal, run,
    instance, dataset, domain, committed, gold, correct, stop, rounds, queries, vlm_calls...).
    Human reasoners (``human:<name>``) are grouped as ``human``, so people form one setting."""
    rows = [t.readouts() for t in transcripts]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["reasoner"] = frame["reasoner"].map(lambda r: "human" if r.startswith("human:") else r)
    return frame


def cross_run(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, instance): runs, prediction, confidence, correct, gold, plus the
    instance's dataset, domain and category."""
    rows = []
    keys = [*SETTING, "instance_id"]
    for key, group in frame.sort_values("run", kind="stable").groupby(keys, sort=False):
        commits = [None if pd.isna(c) else str(c) for c in group["committed"]]
        prediction, confidence = cross_run_prediction(commits)
        first = group.iloc[0]
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "dataset": first["dataset"],
                "domain": first["domain"],
                "category": first["category"],
                "gold": first["gold"],
                "runs": len(group),
                "prediction": prediction,
                "confidence": confidence,
                "correct": prediction is not None and prediction == first["gold"],
            }
        )
    return pd.DataFrame(rows)


def _cross_run_scores(sub: pd.DataFrame) -> dict[str, float]:
    """Cross-run ECE, and AURC and E-AURC of the cross-run confidence gating the predictions
    (:func:`~clearsight.metrics.risk_coverage`; an instance no run committed has confidence
    0 and counts as wrong, as in the ECE). NaN with one run per instance: no cross-run
    confidence."""
    if sub.empty or (sub["runs"] < 2).all():
        return dict.fromkeys(("ece", "aurc", "e_aurc"), float("nan"))
    conf, correct = sub["confidence"].to_numpy(float), sub["correct"].to_numpy(bool)
    rc = risk_coverage(conf, correct)
    return {"ece": ece(conf, correct), "aurc": rc.aurc, "e_aurc": rc.e_aurc}


def summary_table(frame: pd.DataFrame, by: Sequence[str] = ("domain",)) -> pd.DataFrame:
    """Table 1 / Table 9 analogue per setting and ``by`` (e.g. domain or dataset): instances,
    runs, accuracy mean and std over runs (percent), cross-run accuracy, ECE, AURC and E-AURC
    (:func:`_cross_run_scores`), mean rounds, queries and VLM calls per conversation, the share
    that committed, and stop reasons. Pooled over the instances of each group (by dataset, the
    paper's Table 11; :func:`domain_table` is Table 1's macro-average)."""
    if frame.empty:
        return pd.DataFrame()
    per_instance = cross_run(frame)
    groups = [*SETTING, *by]
    rows = []
    for key, group in frame.groupby(groups, sort=True):
        where = np.ones(len(per_instance), dtype=bool)
        for col, value in zip(groups, key, strict=True):
            where &= (per_instance[col] == value).to_numpy()
        inst = per_instance[where]
        by_run = group.groupby("run")["correct"].mean() * 100
        stops = group["stop"].value_counts()
        rows.append(
            {
                **dict(zip(groups, key, strict=True)),
                "instances": int(group["instance_id"].nunique()),
                "runs": int(group["run"].nunique()),
                "acc": float(by_run.mean()),
                "acc_std": float(by_run.std(ddof=1)) if len(by_run) > 1 else float("nan"),
                "cross_acc": float(inst["correct"].mean() * 100),
                **_cross_run_scores(inst),
                "rounds": float(group["rounds"].mean()),
                "queries": float(group["queries"].mean()),
                "vlm_calls": float(group["vlm_calls"].mean()),
                "committed": float(group["committed"].notna().mean() * 100),
                "stops": ", ".join(f"{k} {v}" for k, v in stops.items()),
            }
        )
    return pd.DataFrame(rows)


def domain_table(frame: pd.DataFrame) -> pd.DataFrame:
    r"""The paper's Table 1 per setting and domain (perception, charts, knowledge): each domain
    the **macro-average of its datasets** (knowledge: MMStar, CVQA, ReasonVQA count equally
    whatever their sizes).

    With :math:`a_{d,r}` the accuracy (percent) of dataset d of the domain in run r, the
    domain's accuracy in run r is :math:`ar a_r = rac{1}{|D_r|} \sum_{d \in D_r} a_{d,r}`;
    ``acc`` and ``acc_std`` are the mean and the sample SD (ddof 1) of :math:`ar a_r` over
    the runs (the paper's SD across trials, Table 10); ``ece`` the mean over the datasets of
    their cross-run ECE (:func:`~clearsight.metrics.cross_run_ece`). Also ``datasets`` (how
    many were averaged), ``instances`` and ``runs``.
    """
    if frame.empty:
        return pd.DataFrame()
    per_instance = cross_run(frame)
    rows = []
    for key, group in frame.groupby([*SETTING, "domain"], sort=True):
        by_run = group.groupby(["run", "dataset"])["correct"].mean().mul(100).groupby("run").mean()
        where = np.ones(len(per_instance), dtype=bool)
        for col, value in zip([*SETTING, "domain"], key, strict=True):
            where &= (per_instance[col] == value).to_numpy()
        eces = [_cross_run_scores(sub)["ece"] for _, sub in per_instance[where].groupby("dataset")]
        rows.append(
            {
                **dict(zip([*SETTING, "domain"], key, strict=True)),
                "datasets": int(group["dataset"].nunique()),
                "instances": int(group["instance_id"].nunique()),
                "runs": int(group["run"].nunique()),
                "acc": float(by_run.mean()),
                "acc_std": float(by_run.std(ddof=1)) if len(by_run) > 1 else float("nan"),
                "ece": float(np.mean(eces)),
            }
        )
    return pd.DataFrame(rows)


def sensor_consistency(frame: pd.DataFrame) -> pd.DataFrame:
    """c per (sensor, instance) from the VLM-direct runs: how many direct answers were
    correct, out of ``n`` runs (the build filter uses 11 samples; here c is rescaled to 11
    when n differs, ``c11 = round(11 c / n)``)."""
    direct = frame[frame["strategy"] == "direct"]
    if direct.empty:
        return pd.DataFrame(columns=["sensor", "instance_id", "c", "n", "c11"])
    out = direct.groupby(["sensor", "instance_id"])["correct"].agg(c="sum", n="count").reset_index()
    out["c"] = out["c"].astype(int)
    out["c11"] = np.rint(11 * out["c"] / out["n"]).astype(int)
    return out


def consistency_bins(frame: pd.DataFrame, consistency: pd.DataFrame | None = None) -> pd.DataFrame:
    """Accuracy (per conversation, percent) by the sensor's consistency bin ``c11`` on the
    instance, per setting (Fig. 2). ``consistency``: columns sensor, instance_id, c11 (from
    :func:`sensor_consistency` by default, or from a build run's 11 samples)."""
    cons = sensor_consistency(frame) if consistency is None else consistency
    if cons.empty or frame.empty:
        return pd.DataFrame()
    merged = frame.merge(cons[["sensor", "instance_id", "c11"]], on=["sensor", "instance_id"])
    table = (
        merged.groupby([*SETTING, "c11"])["correct"]
        .agg(accuracy="mean", conversations="count")
        .reset_index()
    )
    table["accuracy"] *= 100
    return table


def ablation_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (percent, over conversations) and ECE by consistency signal shown (true, none,
    random) per reasoner, strategy and sensor (Fig. 3); only settings run with a signal."""
    talk = frame[frame["strategy"] != "direct"]
    if talk.empty:
        return pd.DataFrame()
    summary = summary_table(talk, by=())
    return summary[[*SETTING, "instances", "runs", "acc", "acc_std", "ece", "rounds"]]


def calls_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean VLM calls per question by dataset (rows) and strategy / reasoner (columns), Table 9
    (direct: one call; only answered calls count, see
    :attr:`~clearsight.probe.transcript.Transcript.vlm_calls`), and beside each setting that
    had any, its mean failed calls per question (``<setting> (failed)``)."""
    if frame.empty:
        return pd.DataFrame()
    frame = frame.assign(setting=frame["strategy"] + " / " + frame["reasoner"])
    table = frame.pivot_table(
        index="dataset", columns="setting", values="vlm_calls", aggfunc="mean"
    )
    if "failed_calls" in frame and frame["failed_calls"].fillna(0).gt(0).any():
        failed = frame.pivot_table(
            index="dataset", columns="setting", values="failed_calls", aggfunc="mean"
        )
        failed = failed.loc[:, failed.fillna(0).gt(0).any()]
        table = table.join(failed.add_suffix(" (failed)"))
    return table.reset_index()


# --------------------------------------------------------------------------------------------
# Belief probe
# --------------------------------------------------------------------------------------------

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

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict."""
        return {
            "beliefs": [None if b is None else dict(b) for b in self.beliefs],
            "methods": list(self.methods),
            "texts": list(self.texts),
            "turns": list(self.turns),
        }


def _replay_instance(transcript: Transcript) -> tuple[Any, tuple[str, ...]]:
    """The instance a transcript was about (without its image) and its option letters."""
    from clearsight.probe.instances import Instance

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
    from clearsight.models.base import Decoding, Message, Request, TextPart
    from clearsight.models.replies import complete_checked
    from clearsight.probe.loop import LoopSettings, conversation_messages
    from clearsight.probe.prompts import prompts

    if readout not in BELIEF_READOUTS:
        raise InputError(f"belief read-out {readout!r}: one of {', '.join(BELIEF_READOUTS)}")
    instance, letters = _replay_instance(transcript)
    assess = prompts()["strategies"]["assess"]
    settings = LoopSettings("bp", budget=max(transcript.budget, len(transcript.turns) + 2))
    steps = [i for i, t in enumerate(transcript.turns) if t.reply is not None]
    scored = readout == "letters" and backend.capabilities.candidate_probs
    ask = Message.user(assess["ask"].format(letters=", ".join(letters)))
    requests = []
    for i in steps:
        messages = conversation_messages(
            instance, transcript.turns[: i + 1], settings, transcript.k, system=assess["system"]
        )
        thought = next_reasoning_step(transcript, i) if readout == "stated" else None
        if thought is not None:
            messages.append(Message("assistant", (TextPart(thought),)))
            messages.append(ask)
        else:
            messages[-1] = Message.user(messages[-1].text + "\n" + ask.text)
        requests.append(
            Request(
                tuple(messages),
                Decoding(max_new_tokens=max_new_tokens),
                candidates=letters if scored else (),
                generate=not scored,
            )
        )
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


def belief_summary(transcript: Transcript, trace: BeliefTrace) -> dict[str, Any]:
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


def belief_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Table 7 analogue: per reasoner and dataset, split by final correctness, the mean steps
    to max b >= 0.7 (over conversations that reach it), the reach rate, mean p_chosen and mean
    final p_correct. ``rows``: one row per probed conversation with the columns of
    :func:`belief_summary` plus reasoner and dataset."""
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(
        outcome=np.where(rows["correct"], "correct", "wrong"),
        final_p_correct=rows["p_correct"].map(lambda p: np.nan if p[-1] is None else p[-1]),
        p_chosen=pd.to_numeric(rows["p_chosen"], errors="coerce"),
        steps_to_threshold=pd.to_numeric(rows["steps_to_threshold"], errors="coerce"),
    )
    table = (
        rows.groupby(["reasoner", "dataset", "outcome"])
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


# --------------------------------------------------------------------------------------------
# Query types
# --------------------------------------------------------------------------------------------


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


def parse_query_judgement(text: str) -> dict[str, Any]:
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


def classify_queries(
    transcript: Transcript, backend: Backend, readout: QueryReadout = "judge"
) -> list[dict[str, Any]]:
    """Each query of the conversation with its round and the type the LLM judge assigns, given
    the MCQ question, the query, its round and the earlier queries (the paper's App. H).
    ``judge``: the judge writes a rationale and a JSON label with its confidence
    (:func:`parse_query_judgement`; the reply kept as ``text``); ``scores``: the highest
    candidate probability of the five names where the backend scores candidates (``scores``
    kept), else the first name in its generated text."""
    from clearsight.models.base import Decoding, Message, Request, TextPart
    from clearsight.models.replies import complete_checked
    from clearsight.probe.prompts import prompts

    if readout not in QUERY_READOUTS:
        raise InputError(f"query-type read-out {readout!r}: one of {', '.join(QUERY_READOUTS)}")
    judged = readout == "judge"
    qt = prompts()["strategies"]["query_type_judge" if judged else "query_type"]
    scored = not judged and backend.capabilities.candidate_probs
    queries = [(t.index, t.query) for t in transcript.turns if t.query is not None]
    requests = []
    for n, (rnd, query) in enumerate(queries):
        previous = "; ".join(q for _, q in queries[:n]) or "(none)"
        text = qt["ask"].format(
            question=transcript.question, previous=previous, round=rnd, query=query
        )
        requests.append(
            Request(
                (Message("system", (TextPart(qt["system"]),)), Message.user(text)),
                Decoding(max_new_tokens=96 if judged else 6),
                candidates=QUERY_TYPES if scored else (),
                generate=not scored,
            )
        )
    out = []
    responses = complete_checked(backend, requests) if requests else []
    for (rnd, query), response in zip(queries, responses, strict=True):
        reply = response.texts[0] if response.texts else ""
        if judged:
            judgement = parse_query_judgement(reply)
            out.append({"round": rnd, "query": query, **judgement, "text": reply})
            continue
        scores = {k: float(v) for k, v in (response.candidate_probs or {}).items()}
        if scores:
            kind: str | None = max(QUERY_TYPES, key=lambda t: scores.get(t, 0.0))
        else:
            kind = parse_query_type(reply)
        out.append({"round": rnd, "query": query, "type": kind, "scores": scores})
    return out


def query_type_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Table 3 analogue: share (percent) of each query type in round 1 and in rounds 2+, per
    reasoner. ``rows``: one row per query with reasoner, round and type."""
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(phase=np.where(rows["round"] == 1, "round 1", "round 2+"))
    counts = rows.groupby(["reasoner", "phase", "type"]).size()
    shares = counts / counts.groupby(level=[0, 1]).transform("sum") * 100
    table = shares.unstack("type").reindex(columns=list(QUERY_TYPES)).fillna(0.0)
    table["queries"] = rows.groupby(["reasoner", "phase"]).size()
    return table.reset_index()
