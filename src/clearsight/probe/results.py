"""A probe run read back for its report: conversations, post-hoc analyses, stage-1 samples.

A probe run holds records of five item kinds, each named once where it is written: the
conversations (:data:`clearsight.probe.transcript.PROTOCOL`), the LLM judge's belief probes
and query types (:data:`clearsight.probe.protocol.BELIEF_PROTOCOL` and ``QTYPE_PROTOCOL``),
the stage-1 build samples (:data:`clearsight.probe.build.BUILD_PROTOCOL`) and the judges'
validations against people's labels of u (:mod:`clearsight.probe.agreement`).
:func:`load_probe_results` reads each kind through :class:`~clearsight.store.RunStore`'s reads
by kind into the frames of :class:`ProbeResults`; :mod:`clearsight.report.probe` renders them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from clearsight.probe.agreement import validation_table
from clearsight.probe.analysis import transcripts_frame
from clearsight.probe.build import BUILD_PROTOCOL
from clearsight.probe.posthoc import BELIEF_PROTOCOL, QTYPE_PROTOCOL
from clearsight.probe.transcript import PROTOCOL, Transcript, iter_transcripts
from clearsight.store import RunStore, StoredRecord

__all__ = ["ProbeResults", "load_probe_results"]


@dataclass(frozen=True)
class ProbeResults:
    """What a probe run directory holds, as frames: one row per finished conversation
    (``transcripts``, see :func:`~clearsight.probe.analysis.transcripts_frame`), per
    belief-probed conversation, per classified query and per stage-1 build question (sensor,
    instance_id, c of n direct samples); ``conversations`` are the finished transcripts
    themselves, in the order their items were added (the report shows a few);
    ``validations`` the judges' agreement with people's labels of u (Table 5)."""

    transcripts: pd.DataFrame
    beliefs: pd.DataFrame
    queries: pd.DataFrame
    build: pd.DataFrame
    conversations: tuple[Transcript, ...]
    validations: pd.DataFrame


def _setting(transcripts: dict[str, Transcript], record: StoredRecord) -> dict[str, Any] | None:
    """Reasoner (people grouped as ``human``), strategy and dataset of the conversation an
    analysis record judged, or None when that conversation is not finished in the run."""
    t = transcripts.get(record.spec["transcript"])
    if t is None:
        return None
    who = "human" if t.reasoner.startswith("human:") else t.reasoner
    return {"reasoner": who, "strategy": t.strategy, "dataset": t.dataset}


def load_probe_results(run_dir: Path | str) -> ProbeResults:
    """Read the conversations and post-hoc analyses of a probe run (read-only); InputError
    naming the right command for a run of another protocol."""
    belief_rows: list[dict[str, Any]] = []
    query_rows: list[dict[str, Any]] = []
    with RunStore.open(run_dir, read_only=True) as store:
        store.expect_protocol(PROTOCOL, BUILD_PROTOCOL)
        transcripts = dict(iter_transcripts(store))
        for record in store.iter_records("ok", kind=BELIEF_PROTOCOL, raw=False):
            if (base := _setting(transcripts, record)) is not None:
                belief_rows.append({**base, **record.readouts})
        for record in store.iter_records("ok", kind=QTYPE_PROTOCOL):
            if (base := _setting(transcripts, record)) is not None:
                query_rows += [
                    base | {k: q.get(k) for k in ("round", "type", "confidence")}
                    for q in record.raw
                ]
        build_rows = [
            {
                "sensor": record.spec["sensor"],
                "instance_id": record.readouts["id"],
                "c": record.readouts["c"],
                "n": record.spec["samples"],
            }
            for record in store.iter_records("ok", kind=BUILD_PROTOCOL, raw=False)
        ]
        validations = validation_table(store)
    return ProbeResults(
        transcripts_frame(transcripts.values()),
        pd.DataFrame(belief_rows),
        pd.DataFrame(query_rows),
        pd.DataFrame(build_rows),
        tuple(transcripts.values()),
        validations,
    )
