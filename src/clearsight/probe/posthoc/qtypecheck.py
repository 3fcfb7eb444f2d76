"""How well the query-type judge agrees with people's labels of query types (the paper's App. H).

The paper validates its query-type judge on 200 queries that three annotators labelled: the
judge's type matches at least one annotator's on 82.5 % (the union match rate), and Cohen's
kappa against the consensus label is 0.781. :func:`query_type_agreement` computes the same
from people's labels read from a small JSONL format (:func:`read_query_labels`):

    {"question": "...", "query": "...", "round": 2, "previous": ["..."], "labels": ["Targeted"]}
    {"question": "...", "query": "...", "labels": ["Targeted", "Contrastive"],
     "consensus": "Targeted"}

one query a line: the multiple-choice question, the query, its round (counted by query; default 1),
the earlier queries of its conversation (default none), each person's type (``labels``) and the type
they settled on (``consensus``; left out, the only label or the most common one, an error when two
are equally common). Types are the five of :data:`~clearsight.probe.posthoc.querytypes.QUERY_TYPES`,
in any case. :func:`judge_query_labels` asks the judge exactly as the post-hoc analysis does
(:func:`~clearsight.probe.posthoc.querytypes.query_request`), :func:`store_query_validation` keeps
the result as a record of kind ``probe.qtype-judges`` in the probe run, which the report lists
(:func:`query_validation_table`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.probe.posthoc.agreement import cohen_kappa, read_label_file, stored_validations
from clearsight.probe.posthoc.querytypes import QUERY_TYPES, QueryReadout, classified, query_request
from clearsight.probe.readouts import QueryTypeValidationReadouts
from clearsight.probe.specs import QTYPE_VALIDATION_PROTOCOL, QueryTypeValidationSpec
from clearsight.seeding import content_hash
from clearsight.store import Record, RunStore
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend

__all__ = [
    "QueryLabel",
    "QueryTypeAgreement",
    "judge_query_labels",
    "query_type_agreement",
    "query_validation_table",
    "read_query_labels",
    "store_query_validation",
]


@dataclass(frozen=True)
class QueryLabel:
    """One query with people's types (``line``: where it stands in its file)."""

    question: str
    query: str
    round: int
    previous: tuple[str, ...]
    labels: tuple[str, ...]
    consensus: str
    line: int = 0


def _type(value: Any, where: str) -> str:
    """The query type ``value`` names (any case); InputError otherwise."""
    named = next((t for t in QUERY_TYPES if str(value).lower() == t.lower()), None)
    if not isinstance(value, str) or named is None:
        raise InputError(f"{where}: {value!r} is not a query type ({', '.join(QUERY_TYPES)})")
    return named


def _strings(value: Any, name: str, where: str) -> tuple[str, ...]:
    """A JSON list of strings as a tuple; InputError naming the field otherwise."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: '{name}' must be a list of strings")
    return tuple(value)


def _consensus(labels: tuple[str, ...], given: Any, where: str) -> str:
    """The consensus type: as given, else the single most common label."""
    if given is not None:
        return _type(given, where)
    (first, n), *rest = Counter(labels).most_common()
    if rest and rest[0][1] == n:
        raise InputError(f"{where}: the labels tie; give the 'consensus' type")
    return first


def _query_label(value: Any, source: Path, line: int) -> QueryLabel:
    """The :class:`QueryLabel` of the JSONL value on ``line`` of ``source``."""
    where = f"{source}:{line}"
    if not isinstance(value, dict):
        raise InputError(f"{where}: a label is a JSON object")
    question, query = value.get("question"), value.get("query")
    if not isinstance(question, str) or not isinstance(query, str) or not query.strip():
        raise InputError(f"{where}: 'question' and a non-empty 'query' must be strings")
    rnd = value.get("round", 1)
    if isinstance(rnd, bool) or not isinstance(rnd, int) or rnd < 1:
        raise InputError(f"{where}: 'round' must be an integer >= 1, got {rnd!r}")
    labels = tuple(_type(t, where) for t in _strings(value.get("labels"), "labels", where))
    if not labels:
        raise InputError(f"{where}: 'labels' needs at least one person's type")
    previous = _strings(value.get("previous", []), "previous", where)
    consensus = _consensus(labels, value.get("consensus"), where)
    return QueryLabel(question, query, rnd, previous, labels, consensus, line)


def read_query_labels(path: Path | str) -> list[QueryLabel]:
    """The labels of the JSONL file ``path`` (format in the module docstring)."""
    return read_label_file(path, "query-type labels", _query_label)


@dataclass(frozen=True)
class QueryTypeAgreement:
    """The judge's types against people's over ``n`` queries: ``consensus``, the share equal
    to the consensus type; ``union``, the share equal to at least one person's type (the
    paper's union match rate); ``kappa``, Cohen's kappa of the judge against the consensus over
    the five types (a query the judge named no type for is a sixth category, never the
    people's); ``unparsed``, how many queries the judge named no type for."""

    n: int
    consensus: float
    union: float
    kappa: float
    unparsed: int

    def to_json(self) -> dict[str, float]:
        """JSON-able dict (every value a float, as the store's read-outs hold them)."""
        return {name: float(value) for name, value in asdict(self).items()}


def query_type_agreement(
    judged: Sequence[str | None], labels: Sequence[QueryLabel]
) -> QueryTypeAgreement:
    """The judge's types ``judged`` (None: none named) against the people's ``labels``, one
    each (see :class:`QueryTypeAgreement`)."""
    if not labels or len(judged) != len(labels):
        raise InputError("the judge's types and the labels must be equally many, at least one")
    index = {t: i for i, t in enumerate(QUERY_TYPES)}
    none = len(QUERY_TYPES)
    judge = [none if t is None else index[t] for t in judged]
    people = [index[x.consensus] for x in labels]
    n = len(labels)
    return QueryTypeAgreement(
        n=n,
        consensus=sum(t == x.consensus for t, x in zip(judged, labels, strict=True)) / n,
        union=sum(t in x.labels for t, x in zip(judged, labels, strict=True)) / n,
        kappa=cohen_kappa(judge, people, list(range(none + 1))),
        unparsed=sum(t is None for t in judged),
    )


def judge_query_labels(
    labels: Sequence[QueryLabel], backend: Backend, readout: QueryReadout = "judge"
) -> tuple[list[str | None], float]:
    """The type the judge gives each labelled query (asked as the post-hoc analysis asks,
    :func:`~clearsight.probe.posthoc.querytypes.query_request`) and the seconds it took."""
    from clearsight.models.replies import complete_checked

    judged = readout == "judge"
    scored = not judged and backend.capabilities.candidate_probs
    started = time.perf_counter()
    requests = [
        query_request(x.question, x.previous, x.round, x.query, judged, scored) for x in labels
    ]
    responses = complete_checked(backend, requests)
    types = [
        classified(x.round, x.query, response, judged)["type"]
        for x, response in zip(labels, responses, strict=True)
    ]
    return types, time.perf_counter() - started


def labels_hash(labels: Sequence[QueryLabel]) -> str:
    """Content hash of the labels (question, query, round, earlier queries, types)."""
    return content_hash(
        [
            [x.question, x.query, x.round, list(x.previous), list(x.labels), x.consensus]
            for x in labels
        ]
    )


def store_query_validation(
    run_dir: Path,
    labels: Sequence[QueryLabel],
    spec: QueryTypeValidationSpec,
    result: QueryTypeAgreement,
    seconds: float,
) -> str:
    """Store the judge's validation ``spec`` (its ``labels`` field :func:`labels_hash` of
    ``labels``) in the probe run ``run_dir``, holding the writer lock; return its key. A run of
    another protocol is an InputError."""
    from clearsight.driver import run_lock
    from clearsight.probe.transcript import PROTOCOL

    if spec.labels != labels_hash(labels):
        raise InputError("the validation's labels hash is not the labels'")
    with run_lock(run_dir), RunStore.open(run_dir) as store:
        store.expect_protocol(PROTOCOL)
        store.add_items([(spec.key, spec.kind, spec.to_json())])
        readouts: dict[str, str | float] = {
            "judge": spec.judge,
            "readout": spec.readout,
            "labels": spec.labels,
            **result.to_json(),
            "seconds": seconds,
        }
        store.write_records([Record(spec.key, "ok", None, None, readouts, seconds)])
    return spec.key


def query_validation_table(store: RunStore) -> pd.DataFrame:
    """Every stored query-type judge validation of the run, one row per judge, read-out and
    label set, the shares as percent (empty when none is stored)."""
    columns = ["judge", "readout", "labels", "n", "consensus", "union", "kappa", "unparsed"]
    kind = (QTYPE_VALIDATION_PROTOCOL, QueryTypeValidationReadouts)
    table = stored_validations(store, kind, columns, ["consensus", "union"])
    return table.astype({"unparsed": int}) if not table.empty else table
