"""A probe run's conversations as the run store's records: a transcript's record and item spec,
storing one, and reading them back.

A transcript is stored as one record of kind ``probe`` under the key of its item spec (a
:class:`~clearsight.probe.specs.ProbeSpec`: the planned one, or by default its identifying
fields, :class:`~clearsight.probe.specs.TranscriptSpec`). The record's ``raw`` is
:meth:`~clearsight.probe.transcript.Transcript.to_json` (so everything is recomputable from it)
and its ``readouts`` the summary :meth:`~clearsight.probe.transcript.Transcript.readouts`. An
unfinished conversation may be stored too (``finished=False``): it is a ``failed`` record saying
how far it got, which a finished one replaces and which a resumed run redoes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from clearsight.probe.specs import PROTOCOL, ProbeSpec, TranscriptSpec
from clearsight.probe.transcript import Transcript
from clearsight.store import Record, RunStore


def transcript_record(
    transcript: Transcript, key: str, *, finished: bool = True, elapsed_s: float = 0.0
) -> Record:
    """The store record of a transcript: ``ok`` when finished, else ``failed`` with how far it
    got (a finished record replaces it)."""
    if finished:
        return Record(key, "ok", None, transcript.to_json(), transcript.readouts(), elapsed_s)
    return Record(
        key,
        "failed",
        f"unfinished: {transcript.rounds} turns so far",
        transcript.to_json(),
        transcript.readouts(),
        elapsed_s,
    )


def transcript_spec(
    transcript: Transcript, *, seed: int | None = None, judge: str | None = None
) -> TranscriptSpec:
    """The item spec of a transcript stored without a planned one (``seed`` and ``judge``: a
    serve session's, which with the person's queries determine every reply)."""
    session = transcript.meta.get("session")
    return TranscriptSpec(
        instance_id=transcript.instance_id,
        reasoner=transcript.reasoner,
        strategy=transcript.strategy,
        sensor=transcript.sensor,
        run=transcript.run,
        k=transcript.k,
        budget=transcript.budget,
        signal=transcript.signal,
        seed=seed,
        judge=judge,
        session=session if isinstance(session, str) else None,
    )


def store_transcript(
    store: RunStore,
    transcript: Transcript,
    spec: ProbeSpec | None = None,
    *,
    finished: bool = True,
    elapsed_s: float = 0.0,
) -> str:
    """Add the transcript's item (``spec``; by default :func:`transcript_spec` the
    transcript) if new and write its record; return the key."""
    item = transcript_spec(transcript) if spec is None else spec
    store.add_items([(item.key, item.kind, item.to_json())])
    store.write_records(
        [transcript_record(transcript, item.key, finished=finished, elapsed_s=elapsed_s)]
    )
    return item.key


def iter_transcripts(
    store: RunStore, *, include_unfinished: bool = False
) -> Iterator[tuple[str, Transcript]]:
    """``(key, transcript)`` for every finished probe record (and unfinished ones on request)."""
    for record in store.iter_records(None if include_unfinished else "ok", kind=PROTOCOL):
        if record.raw:
            yield record.key, Transcript.from_json(record.raw)


def load_transcripts(run: Path | str, *, include_unfinished: bool = False) -> list[Transcript]:
    """Every finished transcript of the run directory ``run`` (opened read-only, so safe while
    a run or a UI is writing), in the order their items were added."""
    with RunStore.open(run, read_only=True) as store:
        return [t for _, t in iter_transcripts(store, include_unfinished=include_unfinished)]
