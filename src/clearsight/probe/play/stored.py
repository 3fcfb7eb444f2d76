"""What the probe's human sessions read and write: the instance set people play, and their
sessions in the run's store (each one probe transcript with reasoner ``human:<name>``).

A session is stored under the key of its item spec (:func:`session_spec`); every turn rewrites
its record (:func:`store_session`), ``failed`` while unfinished and ``ok`` once it ended, so
the store alone says where every session stands (:func:`load_session`, :func:`human_sessions`).
A run that people start is a probe run whose manifest holds the server's session settings
(:func:`begin_play_run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clearsight.faces.serving import ServeSettings
from clearsight.probe.play.views import SessionRow
from clearsight.store import DB_NAME, RunStore
from clearsight.ui.runs import read_record
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.probe.instances import Instance
    from clearsight.probe.specs import TranscriptSpec
    from clearsight.probe.transcript import Transcript

__all__ = [
    "StoredSession",
    "begin_play_run",
    "foreign_kinds",
    "human_sessions",
    "load_instance_set",
    "load_session",
    "session_spec",
    "store_session",
]

#: The server settings a run that people start records as its configuration.
_SESSION_FIELDS = (
    "sensor",
    "sensor_options",
    "k",
    "budget",
    "instances",
    "seed",
    "judge",
    "signal",
)


def load_instance_set(source: str) -> list[Instance]:
    """The instances ``--instances`` names: ``bundled``, ``<dataset>:<path>`` (a local copy read
    with that dataset's layout) or the path of a JSONL file of instances."""
    from clearsight.probe.instances import bundled_instances
    from clearsight.probe.sources.layouts import LAYOUTS
    from clearsight.probe.sources.load import instances_from_jsonl, load_instances

    if source == "bundled":
        return bundled_instances()
    dataset, sep, path = source.partition(":")
    if sep and dataset in LAYOUTS:
        return load_instances(path, dataset)
    if not Path(source).is_file():
        raise InputError(
            f"instance set {source!r}: use 'bundled', '<dataset>:<path>' (datasets: "
            f"{', '.join(LAYOUTS)}) or a JSONL file of instances"
        )
    return instances_from_jsonl(source)


def session_spec(transcript: Transcript, settings: ServeSettings) -> TranscriptSpec:
    """The item spec of a human session: the transcript's identifying fields (instance,
    reasoner, strategy, sensor, run, K, budget, signal) plus the run seed and the judge, which
    with the person's queries determine every reply."""
    from clearsight.probe.records import transcript_spec

    return transcript_spec(transcript, seed=settings.seed, judge=settings.judge)


@dataclass(frozen=True)
class StoredSession:
    """A human session as stored: its transcript, its item spec as stored (the spec its turns
    go on being stored under) and whether it has ended."""

    transcript: Transcript
    spec: Mapping[str, object]
    finished: bool


def load_session(run_dir: Path, key: str) -> StoredSession | None:
    """The stored human session ``key``, or None where the key names none (no record, another
    kind, a model's conversation)."""
    from clearsight.probe.transcript import PROTOCOL, Transcript

    record = read_record(run_dir, key)
    if record is None or record["protocol"] != PROTOCOL or not record["raw"]:
        return None
    transcript = Transcript.from_json(record["raw"])
    if not transcript.reasoner.startswith("human:"):
        return None
    return StoredSession(transcript, record["spec"], record["status"] == "ok")


def human_sessions(run_dir: Path) -> list[SessionRow]:
    """Every human session of the run, in the order they were started; the state says whether
    it goes on or how it ended, never the letter or the verdict."""
    if not (run_dir / DB_NAME).is_file():
        return []
    from clearsight.probe.transcript import PROTOCOL

    with RunStore.open(run_dir, read_only=True) as store:
        records = list(store.iter_records(kind=PROTOCOL, raw=False))
    out = []
    for record in records:
        readouts = record.readouts
        if not str(readouts.get("reasoner", "")).startswith("human:"):
            continue  # a model's conversation
        state = "in progress" if record.status != "ok" else f"ended: {readouts.get('stop')}"
        out.append(
            SessionRow(
                key=record.key,
                human=str(readouts.get("reasoner", "")),
                instance_id=str(readouts.get("instance_id", "")),
                turns=int(readouts.get("rounds", 0)),
                state=state,
            )
        )
    return out


def foreign_kinds(run_dir: Path) -> list[str]:
    """The item kinds of the run that are not the probe's (sorted; none in a new directory): a
    run holding any is no place for human sessions. The probe's analyses and build samples
    (kinds ``probe.*``) are its own."""
    if not (run_dir / DB_NAME).is_file():
        return []
    from clearsight.probe.transcript import PROTOCOL

    with RunStore.open(run_dir, read_only=True) as store:
        kinds = store.item_kinds()
    return sorted(k for k in kinds if k != PROTOCOL and not k.startswith(f"{PROTOCOL}."))


def begin_play_run(run_dir: Path, settings: ServeSettings) -> None:
    """Create the store of a probe run that human sessions start, its manifest's configuration
    the server's session settings."""
    from clearsight.provenance import run_manifest

    config = {
        "protocol": "probe",
        "reasoner": "human",
        **settings.model_dump(include=set(_SESSION_FIELDS)),
    }
    with RunStore.open(run_dir) as store:
        store.begin_run(run_manifest(config, "probe", source="clearsight serve"))


def store_session(
    run_dir: Path, transcript: Transcript, spec: TranscriptSpec, finished: bool
) -> str:
    """Write the session's record (and item) into the run's store; its key."""
    from clearsight.probe.records import store_transcript

    with RunStore.open(run_dir) as store:
        return store_transcript(store, transcript, spec, finished=finished)
