"""A probe run read back: conversations, post-hoc analyses, stage-1 samples, as frames.

A probe run holds records of six item kinds, each named once where it is written: the
conversations (:data:`clearsight.probe.transcript.PROTOCOL`), the LLM judge's belief probes
and query types (:data:`clearsight.probe.posthoc.protocol.BELIEF_PROTOCOL` and ``QTYPE_PROTOCOL``),
the stage-1 build samples (:data:`clearsight.probe.bench.protocol.BUILD_PROTOCOL`) and the judges'
validations against people's labels of u (:mod:`clearsight.probe.posthoc.agreement`) and of query
types (:mod:`clearsight.probe.posthoc.qtypecheck`).
:func:`load_probe_results` reads each kind through :class:`~clearsight.store.RunStore`'s reads
by kind into the frames of :class:`ProbeResults`; :mod:`clearsight.probe.analysis` computes the
run's numbers from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypedDict

import pandas as pd

from clearsight.probe.bench.protocol import BUILD_PROTOCOL
from clearsight.probe.posthoc.agreement import validation_table
from clearsight.probe.posthoc.protocol import BELIEF_PROTOCOL, QTYPE_PROTOCOL
from clearsight.probe.posthoc.qtypecheck import query_validation_table
from clearsight.probe.readouts import (
    BeliefReadouts,
    BuildReadouts,
    ConversationReadouts,
    QueryTypeReadouts,
)
from clearsight.probe.reasoner.limits import limits_statement
from clearsight.probe.records import iter_transcripts
from clearsight.probe.transcript import PROTOCOL, Transcript
from clearsight.store import RunStore, read_shared
from clearsight.validate import InputError

__all__ = ["SETTING", "ProbeResults", "load_probe_results", "pool_results", "transcripts_frame"]

#: What makes a setting: who reasoned, how, with which sensor drawing how many samples per
#: query (K; Direct draws one), shown which signal. K belongs to it so that runs with another K
#: stand beside each other (the paper's Table 6).
SETTING: Final[tuple[str, ...]] = ("reasoner", "strategy", "sensor", "k", "signal")


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


@dataclass(frozen=True)
class ProbeResults:
    """What a probe run directory holds, as frames: one row per finished conversation
    (``transcripts``, see :func:`transcripts_frame`, with its item's ``key`` first and
    ``seconds``, the wall-clock time its record stores), per belief-probed conversation, per
    classified query and per stage-1 build question (sensor, instance_id, c of n direct
    samples); ``conversations`` are the finished transcripts themselves, in the order their
    items were added (the report shows a few); ``validations`` the judges' agreement with
    people's labels of u (Table 5), ``query_type_validations`` the query-type judge's with
    people's labels of query types (:mod:`~clearsight.probe.posthoc.qtypecheck`);
    ``settings`` what each run's manifest says of the choices its report names: its
    generation limits (:func:`~clearsight.probe.reasoner.limits.limits_statement`) and the
    judge behind u (:func:`~clearsight.probe.judges.judge_statement`); none for a build run."""

    transcripts: pd.DataFrame
    beliefs: pd.DataFrame
    queries: pd.DataFrame
    build: pd.DataFrame
    conversations: tuple[Transcript, ...]
    validations: pd.DataFrame
    query_type_validations: pd.DataFrame
    settings: tuple[str, ...] = ()


class _Setting(TypedDict):
    """The setting of the conversation an analysis record judged."""

    reasoner: str
    strategy: str
    dataset: str
    sensor: str
    run: int
    signal: str


def _setting(transcripts: Mapping[str, Transcript], spec: Mapping[str, Any]) -> _Setting | None:
    """Reasoner (people grouped as ``human``), strategy and dataset of the conversation an
    analysis item (its stored ``spec``) judged, or None when that conversation is not finished
    in the run."""
    t = transcripts.get(spec["transcript"])
    if t is None:
        return None
    who = "human" if t.reasoner.startswith("human:") else t.reasoner
    return {
        "reasoner": who,
        "strategy": t.strategy,
        "dataset": t.dataset,
        "sensor": t.sensor,
        "run": t.run,
        "signal": t.signal,
    }


def _analysis_frames(
    store: RunStore, transcripts: Mapping[str, Transcript]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The belief probes (one row per conversation: its setting and read-outs) and the query
    types (one row per query: its setting, round, turn, type and confidence) of finished
    conversations. A query's ``round`` counts queries (the conversation's n-th query is round
    n, the paper's Table 3); ``turn`` is the turn that asked it (the round a record stores,
    larger when a turn before it asked nothing)."""
    beliefs, queries = [], []
    for record in store.iter_records(
        "ok", kind=BELIEF_PROTOCOL, raw=False, readouts=BeliefReadouts
    ):
        if (base := _setting(transcripts, record.spec)) is not None:
            beliefs.append({**base, **record.readouts})
    for asked in store.iter_records("ok", kind=QTYPE_PROTOCOL, readouts=QueryTypeReadouts):
        if (base := _setting(transcripts, asked.spec)) is not None:
            queries += [
                {
                    **base,
                    "round": n,
                    "turn": q.get("round"),
                    **{k: q.get(k) for k in ("type", "confidence")},
                }
                for n, q in enumerate(asked.raw, start=1)
            ]
    return pd.DataFrame(beliefs), pd.DataFrame(queries)


def _build_frame(store: RunStore) -> pd.DataFrame:
    """One row per stage-1 build question: sensor, instance_id, c of n direct samples, and
    the question's dataset, gold and the letter each sample named (Fig. 7)."""
    return pd.DataFrame(
        [
            {
                "sensor": record.spec["sensor"],
                "instance_id": record.readouts["id"],
                "c": record.readouts["c"],
                "n": record.spec["samples"],
                "dataset": record.spec["instance"]["dataset"],
                "gold": record.spec["instance"]["gold"],
                "letters": record.readouts["letters"],
            }
            for record in store.iter_records(
                "ok", kind=BUILD_PROTOCOL, raw=False, readouts=BuildReadouts
            )
        ]
    )


def _settings_lines(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The run's generation limits, the judge behind u and (a run with UoT made since its stop
    rule) the search's settings, as the report names them."""
    from clearsight.probe.judges import judge_statement

    judge = str((manifest.get("config") or {}).get("judge") or "embedding")
    search = manifest.get("uot") or {}
    return (
        "Generation limits (clearsight's choice per model; the paper gives no cap): "
        + limits_statement(manifest),
        judge_statement(judge),
        *([str(search["statement"])] if "statement" in search else []),
    )


@read_shared
def load_probe_results(run_dir: Path | str) -> ProbeResults:
    """Read the conversations and post-hoc analyses of a probe run (read-only); InputError
    naming the right command for a run of another protocol."""
    with RunStore.open(run_dir, read_only=True) as store:
        store.expect_protocol(PROTOCOL, BUILD_PROTOCOL)
        transcripts = dict(iter_transcripts(store))
        conversations = store.iter_records(
            "ok", kind=PROTOCOL, raw=False, readouts=ConversationReadouts
        )
        seconds = {r.key: r.elapsed_s for r in conversations}
        beliefs, queries = _analysis_frames(store, transcripts)
        build = _build_frame(store)
        validations = validation_table(store)
        query_validations = query_validation_table(store)
        manifest = store.manifest()
        settings = _settings_lines(manifest) if manifest.get("protocol") == PROTOCOL else ()
    frame = transcripts_frame(transcripts.values())
    if not frame.empty:
        frame.insert(0, "key", list(transcripts))
        frame["seconds"] = [seconds.get(key) for key in transcripts]
    return ProbeResults(
        frame,
        beliefs,
        queries,
        build,
        tuple(transcripts.values()),
        validations,
        query_validations,
        settings,
    )


def _settings(frame: pd.DataFrame) -> set[tuple[str, ...]]:
    """The settings (reasoner, strategy, sensor, K, signal) of a transcripts frame."""
    if frame.empty:
        return set()
    rows = frame[list(SETTING)].astype(str).itertuples(index=False)
    return {tuple(row) for row in rows}


def pool_results(runs: Sequence[tuple[str, ProbeResults]]) -> ProbeResults:
    """Several probe runs read back as one, so their settings stand side by side in every
    table (runs with another sensor or K: the paper's Tables 4 and 6). Refused (InputError)
    when two runs hold the same setting: their run indices would mix in the cross-run
    numbers."""
    seen: dict[tuple[str, ...], str] = {}
    for name, results in runs:
        for setting in sorted(_settings(results.transcripts)):
            if setting in seen:
                raise InputError(
                    f"runs {seen[setting]} and {name} both hold the setting "
                    f"{'/'.join(setting)} (reasoner/strategy/sensor/K/signal); report them apart"
                )
            seen[setting] = name
    parts = [results for _, results in runs]

    def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
        kept = [f for f in frames if not f.empty]
        return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()

    return ProbeResults(
        concat([r.transcripts for r in parts]),
        concat([r.beliefs for r in parts]),
        concat([r.queries for r in parts]),
        concat([r.build for r in parts]),
        tuple(t for r in parts for t in r.conversations),
        concat([r.validations for r in parts]),
        concat([r.query_type_validations for r in parts]),
        tuple(f"{name}: {line}" for name, r in runs for line in r.settings),
    )
