"""The probe in ``clearsight view``: :class:`ProbeRunView`, the
:class:`~clearsight.faces.viewing.RunView` of a probe run (the probe face's ``view``). The
viewer is an operator's tool, so it shows the image the sensor saw; it is no part of the
human-play server (``clearsight serve``), which never serves it.

An item is one finished conversation (an ok record of kind ``probe``, as
:func:`~clearsight.probe.records.iter_transcripts` reads them).

* **points**: per dataset, one curve over the run's settings (reasoner, strategy, sensor, K,
  signal: :data:`~clearsight.probe.results.SETTING`, people grouped as ``human`` as
  :func:`~clearsight.probe.results.transcripts_frame` groups them), each point the share of
  its conversations committed to the gold and ``n`` their number: the analysis's accuracy
  per setting and dataset (:func:`~clearsight.probe.numbers.accuracy.summary_table` by dataset).
  Each point lists exactly those conversations.
* **listing**: the conversations a query selects, read from the run's side index
  (:mod:`clearsight.view.index`); outcome ``correct``, ``wrong`` (committed to another
  option) or ``abstained`` (committed to none). A conversation states no confidence, so it
  is listed without one (``confidently-wrong`` lists none) and sorts in the run's order.
* **detail**: the question and options (the committed one and the gold marked), then the
  conversation turn by turn: the reasoner's text with its stated belief where it stated one,
  the query, the sensor's K samples, the realised reply and its u, the commitment; the
  verdict and stop reason.
* **belief probes** (``clearsight probe analyse``): pages of their own, reached from their
  conversation's page (:mod:`~clearsight.probe.face.beliefs`).
* **image**: the instance's image (:func:`~clearsight.probe.instances.instance_image`), read
  from the instance the stored record names.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.faces.viewing import (
    Bar,
    Detail,
    Listing,
    Point,
    Query,
    Row,
    Section,
    Span,
    as_groups,
)
from clearsight.probe.face.beliefs import belief_page, beliefs_of
from clearsight.probe.specs import PROTOCOL
from clearsight.store import IndexDesign, Order, Select, StoredRecord, run_manifest
from clearsight.validate import InputError
from clearsight.view.index import RunIndex, record_of

if TYPE_CHECKING:
    from clearsight.faces.viewing import Group, Identity, Related

__all__ = ["PROBE_INDEX", "ProbeRunView"]

#: A setting's columns (:data:`~clearsight.probe.results.SETTING`), then the dataset.
_SETTING = ("reasoner", "strategy", "sensor", "k", "signal")
_COLUMNS = {
    "key": "TEXT",
    "instance": "TEXT",
    "dataset": "TEXT",
    **{name: "TEXT" for name in _SETTING},
    "run": "INTEGER",
    "committed": "TEXT",
    "gold": "TEXT",
    "correct": "REAL",
}


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    """A chunk of finished conversations as the index's rows (people as ``human``)."""
    out = pd.DataFrame({"id": frame["id"], "key": frame["key"].astype(str)}, index=frame.index)
    out["instance"] = frame["instance_id"].astype(str)
    for name in ("dataset", *_SETTING):
        out[name] = frame[name].astype(str)
    out["reasoner"] = out["reasoner"].map(lambda r: "human" if r.startswith("human:") else r)
    out["run"] = pd.to_numeric(frame["run"], errors="coerce")
    out["committed"] = frame["committed"].astype(object).where(frame["committed"].notna(), None)
    out["gold"] = frame["gold"].astype(str)
    out["correct"] = frame["correct"].astype(object).isin([True]).astype(float)
    return out


PROBE_INDEX = IndexDesign(
    kind=PROTOCOL,
    read=("key", "instance_id", "dataset", *_SETTING, "run", "committed", "gold", "correct"),
    columns=_COLUMNS,
    indexes=(("dataset", *_SETTING), ("instance",)),
    rows=_rows,
    tally=("dataset", *_SETTING),
    tallied=("correct",),
)

#: The rows each outcome selects (``confidently-wrong``: none, a conversation states no
#: confidence).
_OUTCOMES = {
    "": Select(()),
    "correct": Select((), equal={"correct": 1.0}),
    "wrong": Select((), equal={"correct": 0.0}, present=("committed",)),
    "abstained": Select((), missing=("committed",)),
    "confidently-wrong": Select((), among={"id": ()}),
}
_LISTED = (
    *("key", "instance", "dataset", "reasoner", "strategy", "k", "signal", "run"),
    *("committed", "gold", "correct"),
)
#: Each (dataset, setting) cell's count and number correct, in the run's order: the tally.
_CELLS = Select(
    ("dataset", *_SETTING, "n_correct", "s_correct"), order=(Order("first"),), table="tally"
)


class ProbeRunView:
    """The viewer's reads of one probe run (module docstring)."""

    def __init__(self, run_dir: Path) -> None:
        """Read ``run_dir``'s manifest (an InputError where it holds no probe run)."""
        self.run_dir = Path(run_dir)
        protocol = run_manifest(self.run_dir).get("protocol")
        if protocol != PROTOCOL:
            raise InputError(f"{self.run_dir} is a {protocol} run, not a probe run")
        self.index = RunIndex(self.run_dir, PROBE_INDEX)

    @property
    def title(self) -> str:
        """The run's directory name and protocol."""
        return f"{self.run_dir.resolve().name} (probe)"

    def _cells(self) -> list[tuple[str, ...]]:
        """Each (dataset, setting) cell with its count and number correct, from the tally."""
        found = self.index.read(_CELLS)
        return [tuple(str(value) for value in cell) for cell in found]

    def filters(self) -> Mapping[str, tuple[str, ...]]:
        """dataset, reasoner, strategy, sensor, k and signal: the values the run's finished
        conversations have (its tally)."""
        cells = self._cells()
        names = ("dataset", *_SETTING)
        return {name: tuple(sorted({cell[i] for cell in cells})) for i, name in enumerate(names)}

    def points(self) -> tuple[Point, ...]:
        """Per dataset, each setting's accuracy (module docstring)."""
        cells = sorted(self._cells(), key=lambda cell: cell[0])
        return tuple(_point(cell) for cell in cells if float(cell[-2]) > 0)

    def listing(self, query: Query) -> Listing:
        """The page of conversations ``query`` asks for, read from the side index."""
        select = dataclasses.replace(
            _OUTCOMES[query.outcome],
            columns=_LISTED,
            equal={**_OUTCOMES[query.outcome].equal, **query.filters},
            limit=query.per_page,
            offset=query.page * query.per_page,
        )
        total, rows = self.index.page(select)
        return Listing(tuple(_row(*values) for values in rows), total)

    def _record(self, key: str) -> StoredRecord | None:
        found = record_of(self.run_dir, key, PROTOCOL)
        finished = found is not None and found.status == "ok" and bool(found.raw)
        return found if finished else None

    def detail(self, key: str) -> Detail | None:
        """The conversation ``key`` as its page shows it, or the belief probe ``key``
        (:mod:`~clearsight.probe.face.beliefs`); None: neither."""
        found = self._record(key)
        return belief_page(self.run_dir, key) if found is None else _detail(found)

    def image(self, key: str) -> bytes | None:
        """The image the sensor saw in conversation ``key``, as PNG."""
        from PIL import Image

        from clearsight.probe.instances import Instance, instance_image

        found = self._record(key)
        if found is None:
            return None
        stored = found.spec["instance"]
        instance = Instance(**{**stored, "options": tuple(stored["options"])})
        buffer = io.BytesIO()
        Image.fromarray(instance_image(instance)).save(buffer, format="PNG")
        return buffer.getvalue()

    def groups(self, key: str) -> tuple[Group, ...]:
        """The conversation beside its belief probes, where it has any."""
        found = beliefs_of(self.run_dir, key)
        return () if found is None else as_groups((found,))

    def related(self, key: str, name: str) -> Related | None:
        """The conversation and its belief probes side by side (``beliefs``:
        :func:`~clearsight.probe.face.beliefs.beliefs_of`)."""
        return beliefs_of(self.run_dir, key) if name == "beliefs" else None

    def identity(self, key: str) -> Identity | None:
        """None: ``clearsight compare`` matches no probe runs, so neither does the viewer."""
        return None

    def find(self, identity: Identity) -> str | None:
        """None (see :meth:`identity`)."""
        return None


def _point(cell: tuple[str, ...]) -> Point:
    """One (dataset, setting) cell of the tally as a point."""
    dataset, reasoner, strategy, sensor, k, signal, n, right = cell
    filters = dict(zip(("dataset", *_SETTING), cell[:6], strict=True))
    x_label = f"{strategy} · {reasoner} · {sensor} · K={k} · signal {signal}"
    return Point(f"{dataset} · accuracy", x_label, float(right) / float(n), int(float(n)), filters)


def _row(*values: object) -> Row:
    """One indexed conversation (:data:`_LISTED`) as a listing's row."""
    key, instance, dataset, reasoner, strategy, k, signal, run, committed, gold, correct = values
    labels = {"instance": str(instance), "dataset": str(dataset), "reasoner": str(reasoner)}
    labels |= {"strategy": str(strategy), "K": str(k), "signal": str(signal), "run": str(run)}
    labels |= {"committed": "" if committed is None else str(committed), "gold": str(gold)}
    labels["verdict"] = _verdict(committed, correct == 1.0)
    return Row(str(key), labels, None)


def _verdict(committed: object, correct: bool) -> str:
    if committed is None:
        return "abstained"
    return "correct" if correct else "wrong"


def _turn(turn: Mapping[str, Any]) -> Iterator[Span]:
    """A turn's spans: the reasoner's text and stated belief, the query, the sensor's samples,
    the realised reply and u, the commitment."""
    text = str(turn.get("raw") or "")
    yield Span(text, "reasoner")
    beliefs = [line for line in text.splitlines() if line.lower().startswith("belief")]
    if beliefs:
        yield Span("\n".join(beliefs), "belief stated", "belief")
    reply = turn.get("reply")
    if turn.get("query"):
        yield Span(str(turn["query"]), "query to the sensor")
    if isinstance(reply, Mapping):
        samples = reply.get("samples") or []
        yield Span(" | ".join(str(s) for s in samples), f"the sensor's K={len(samples)} samples")
        realised = f"{reply.get('reply')} (u = {reply.get('u')}, shown u = {turn.get('shown_u')})"
        yield Span(realised, "realised reply", "realised")
    if turn.get("commit"):
        yield Span(str(turn["commit"]), "committed", "commit")


def _detail(found: StoredRecord) -> Detail:
    """A finished conversation's page (module docstring)."""
    raw, out = found.raw, found.readouts
    letters = [chr(ord("A") + i) for i in range(len(raw.get("options") or []))]
    bars = tuple(
        Bar(f"({letter}) {option}", None, letter == raw.get("committed"), letter == raw["gold"])
        for letter, option in zip(letters, raw.get("options") or [], strict=True)
    )
    names = ("instance_id", "dataset", "category", "reasoner", "strategy", "sensor", "k")
    labels = {name: str(out.get(name, "")) for name in (*names, "signal", "run")}
    labels |= {"committed": str(raw.get("committed")), "gold": str(raw.get("gold"))}
    labels["verdict"] = _verdict(raw.get("committed"), bool(raw.get("correct")))
    values = {name: str(out.get(name)) for name in ("stop", "rounds", "queries", "mean_u")}
    sections = tuple(
        Section(f"Turn {turn.get('index', n)}", tuple(_turn(turn)))
        for n, turn in enumerate(raw.get("turns") or [], start=1)
    )
    return Detail(
        key=found.key,
        labels=labels,
        prompt=str(raw.get("question", "")),
        bars=bars,
        values=values,
        raw_text=json.dumps(raw, indent=1, default=str),
        sections=sections,
    )
