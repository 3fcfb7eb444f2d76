"""Trajectory grounding in ``clearsight view``: :class:`GroundingRunView`, the
:class:`~clearsight.faces.viewing.RunView` of a grounding run (the grounding face's ``view``).

An item is one elicitation (kind ``grounding.elicit``): a trajectory, whole, partly masked or
edited, and the 11-way confidence distribution the model gave at its slot.

* **points**: per model and benchmark, one curve over the run's variants (``self/r0.00`` ..
  ``self/r1.00`` of TGS-self's masking curve, ``bench/good`` and ``bench/<axis>/bad`` of the
  TGS-Bench pairs, the hand-written or sampled variations, the hesitation cuts), each point
  the mean expected confidence of the ok elicitations of that cell and ``n`` their number:
  the cells the analysis's scores are differences of (:func:`~clearsight.grounding.tgs.
  scores` over :func:`~clearsight.grounding.results.load_grounding_results`' elicitations).
  Each point lists exactly those elicitations.
* **listing**: the ok elicitations a query selects (model, benchmark, variant), sorted by
  expected confidence and paged by the run's side index (:mod:`clearsight.view.
  index`). An elicitation has no answer of its own to be right or wrong, so an outcome filter
  lists none.
* **detail**: the trajectory span by span (vision, reasoning, answer; the rationale marked
  masked with its share hidden where the variant masks it), its distribution as bars beside
  those of the same problem with the rationale visible and hidden (TGS-self), for a TGS-Bench
  bad side the edit as a word diff against the good side, for a hesitation cut the other side
  of the cut and the words between the two sides (the hesitating sentence). The same
  problem's other elicitations are found through the side index and read by key.
* **image**: none (the trajectories are text).
* **groups**, **related**, **identity**, **find**, and the pages of own trajectories and judge
  verdicts: items side by side and matched across runs (:mod:`~clearsight.grounding.face.sides`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clearsight.faces import viewing
from clearsight.faces.viewing import Bar, Chart, Detail, Listing, Point, Query, Row, Section, Span
from clearsight.grounding.face.sides import find_in, group_of, groups_of, identity_of, other_detail
from clearsight.grounding.specs import ELICIT
from clearsight.store import IndexDesign, Order, RunStore, Select, StoredRecord, run_manifest
from clearsight.validate import InputError
from clearsight.view.index import RunIndex

__all__ = ["GROUNDING_INDEX", "GroundingRunView", "word_diff"]

_COLUMNS = {
    "key": "TEXT",
    "model": "TEXT",
    "problem": "TEXT",
    "benchmark": "TEXT",
    "variant": "TEXT",
    "share": "REAL",
    "expected": "REAL",
}


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    """A chunk of ok elicitations as the index's rows."""
    out = pd.DataFrame({"id": frame["id"]}, index=frame.index)
    names = {"key": "key", "model": "model", "problem.id": "problem"}
    names |= {"problem.benchmark": "benchmark", "variant": "variant"}
    for read, column in names.items():
        out[column] = frame[read].astype(str)
    for column in ("share", "expected"):
        out[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return out


GROUNDING_INDEX = IndexDesign(
    kind=ELICIT,
    read=("key", "model", "problem.id", "problem.benchmark", "variant", "share", "expected"),
    columns=_COLUMNS,
    indexes=(("model", "benchmark", "variant"), ("problem",), ("expected",)),
    rows=_rows,
    tally=("model", "benchmark", "variant"),
    tallied=("expected",),
)

#: The variant families in the curves' order.
_FAMILIES = ("self", "bench", "variation", "hesitation")
_ORDER = {
    "": (),
    "desc": (Order("expected", descending=True),),
    "asc": (Order("expected"),),
}
#: Each cell's count and sum of expected confidence: the index's tally.
_CELLS = Select(("model", "benchmark", "variant", "n_expected", "s_expected"), table="tally")
#: A listing's columns, as :func:`_row` reads them.
_LISTED = ("key", "model", "benchmark", "problem", "variant", "share", "expected")
_NUMERALS = tuple(str(k) for k in range(11))


def _variant_order(variant: str) -> tuple[int, int, str]:
    """Where a variant stands on its curve: by family, the good side before the bad ones."""
    family = variant.split("/")[0]
    rank = _FAMILIES.index(family) if family in _FAMILIES else len(_FAMILIES)
    return rank, int(variant != "bench/good"), variant


class GroundingRunView:
    """The viewer's reads of one grounding run (module docstring)."""

    def __init__(self, run_dir: Path) -> None:
        """Read ``run_dir``'s manifest (an InputError where it holds no grounding run)."""
        self.run_dir = Path(run_dir)
        protocol = run_manifest(self.run_dir).get("protocol")
        if protocol != "grounding":
            raise InputError(f"{self.run_dir} is a {protocol} run, not a grounding run")
        self.index = RunIndex(self.run_dir, GROUNDING_INDEX)

    @property
    def title(self) -> str:
        """The run's directory name and protocol."""
        return f"{self.run_dir.resolve().name} (grounding)"

    def _cells(self) -> list[tuple[str, str, str, int, float]]:
        """(model, benchmark, variant, n, sum of expected) of each cell, from the tally."""
        cells = self.index.read(_CELLS)
        return [(str(m), str(b), str(v), int(n), float(s)) for m, b, v, n, s in cells]

    def filters(self) -> Mapping[str, tuple[str, ...]]:
        """model, benchmark and variant: the values the run's elicitations have (its tally)."""
        cells = self._cells()
        variants = sorted({v for _, _, v, _, _ in cells}, key=_variant_order)
        return {
            "model": tuple(sorted({m for m, *_ in cells})),
            "benchmark": tuple(sorted({b for _, b, *_ in cells})),
            "variant": tuple(variants),
        }

    def points(self) -> tuple[Point, ...]:
        """Per model and benchmark, the mean expected confidence of each variant's
        elicitations (module docstring)."""
        cells = sorted(self._cells(), key=lambda c: (c[0], c[1], _variant_order(c[2])))
        return tuple(
            Point(
                f"{model} · {benchmark} · expected confidence",
                variant,
                total / n,
                n,
                {"model": model, "benchmark": benchmark, "variant": variant},
            )
            for model, benchmark, variant, n, total in cells
            if n > 0
        )

    def listing(self, query: Query) -> Listing:
        """The page of elicitations ``query`` asks for, read from the side index (an outcome
        selects none: an elicitation is neither right nor wrong)."""
        select = Select(
            _LISTED,
            equal=dict(query.filters),
            among={"id": ()} if query.outcome else {},
            order=_ORDER[query.sort],
            limit=query.per_page,
            offset=query.page * query.per_page,
        )
        total, rows = self.index.page(select)
        return Listing(tuple(_row(*values) for values in rows), total)

    def _siblings(self, model: str, problem: str) -> dict[str, str]:
        """The same model's elicitations of ``problem``: variant -> key."""
        select = Select(("variant", "key"), equal={"problem": problem, "model": model})
        found = self.index.read(select)
        return {str(variant): str(key) for variant, key in found}

    def _record(self, store: RunStore, key: str) -> StoredRecord | None:
        found = store.record(key)
        return found if found is not None and found.protocol == ELICIT else None

    def detail(self, key: str) -> Detail | None:
        """The elicitation (or own trajectory, judge verdict) ``key`` as its page shows it."""
        with RunStore.open(self.run_dir, read_only=True) as store:
            found = self._record(store, key)
            if found is None:
                return other_detail(self.run_dir, key, word_diff)
            problem = found.spec["problem"]
            siblings = self._siblings(str(found.spec["model"]), str(problem["id"]))
            others = {
                variant: record
                for variant, other in siblings.items()
                if variant in _counterparts(found.spec["variant"])
                and (record := self._record(store, other)) is not None
            }
        return _detail(found, others)

    def image(self, key: str) -> bytes | None:
        """None: a grounding item is text."""
        return None

    def groups(self, key: str) -> tuple[viewing.Group, ...]:
        """The item's problem's variants and records (:mod:`~clearsight.grounding.face.sides`)."""
        return groups_of(self.run_dir, key, self._siblings, _variant_order)

    def related(self, key: str, name: str) -> viewing.Related | None:
        """The group ``name`` of the item, with its members."""
        return group_of(self.run_dir, key, name, self._siblings, _variant_order)

    def identity(self, key: str) -> viewing.Identity | None:
        """The problem, variant and read-out of ``key`` (``clearsight compare``'s matching)."""
        return identity_of(self.run_dir, key)

    def find(self, identity: viewing.Identity) -> str | None:
        """This run's elicitation of another grounding run's ``identity``."""
        return find_in(self, self.run_dir, identity)


def _row(*values: object) -> Row:
    """One indexed elicitation (key, model, benchmark, problem, variant, share, expected) as a
    listing's row."""
    key, model, benchmark, problem, variant, share, expected = values
    labels = {"problem": str(problem), "model": str(model), "benchmark": str(benchmark)}
    labels |= {"variant": str(variant), "share hidden": _text(share)}
    return Row(str(key), labels, None if expected is None else float(str(expected)), image=False)


def _counterparts(variant: str) -> tuple[str, ...]:
    """The variants an elicitation's page shows beside its own distribution: the rationale
    visible and hidden (TGS-self), the good side of a TGS-Bench pair, the other side of a
    hesitation cut."""
    shown = ["self/r0.00", "self/r1.00"]
    if variant.startswith("bench/") and variant != "bench/good":
        shown.append("bench/good")
    if variant.startswith("hesitation/"):
        stem, side = variant.rsplit("/", 1)
        shown.append(f"{stem}/{'post' if side == 'pre' else 'pre'}")
    return tuple(v for v in shown if v != variant)


def _bars(probs: Any) -> tuple[Bar, ...]:
    """An 11-way distribution (confidence k/10 for the numeral k) as bars."""
    values = list(probs) if probs is not None else [None] * len(_NUMERALS)
    return tuple(
        Bar(f"{label} ({int(label) / 10:.1f})", None if p is None else float(p), False, False)
        for label, p in zip(_NUMERALS, values, strict=False)
    )


def _trajectory(spec: Mapping[str, Any]) -> Section:
    """The elicitation's trajectory span by span, the rationale marked where it is masked."""
    trajectory, share = spec.get("trajectory") or {}, float(spec.get("share") or 0.0)
    mark = f"masked: {share:.0%} of its tokens hidden" if share > 0 else ""
    spans = tuple(
        Span(str(trajectory.get(part, "")), part, mark if part != "answer" else "")
        for part in ("vision", "reasoning", "answer")
    )
    return Section(f"Trajectory ({spec['variant']})", spans)


def word_diff(before: str, after: str) -> tuple[Span, ...]:
    """``before`` edited into ``after`` as spans: the words kept plain, those removed and
    added marked."""
    old, new = before.split(), after.split()
    out: list[Span] = []
    for tag, a, b, c, d in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(Span(" ".join(old[a:b])))
            continue
        if b > a:
            out.append(Span(" ".join(old[a:b]), mark="removed"))
        if d > c:
            out.append(Span(" ".join(new[c:d]), mark="added"))
    return tuple(out)


def _rationale(spec: Mapping[str, Any], part: str | None = None) -> str:
    """A stored elicitation's ``part`` of its trajectory (None: vision, then reasoning)."""
    trajectory = spec.get("trajectory") or {}
    parts = (part,) if part else ("vision", "reasoning")
    return " ".join(str(trajectory.get(name, "")) for name in parts)


def _edits(spec: Mapping[str, Any], others: Mapping[str, StoredRecord]) -> Iterator[Section]:
    """What changed against the counterpart: a TGS-Bench bad side's edit of its axis against
    the good side; a hesitation cut's rationale against the other side of the cut (the post
    side holds the hesitation's sentence, the pre side stops before it). Word diffs."""
    variant = str(spec["variant"])
    parts = variant.split("/")
    good = others.get("bench/good")
    if good is not None and len(parts) == 3 and parts[0] == "bench":
        axis = parts[1]
        diff = word_diff(_rationale(good.spec, axis), _rationale(spec, axis))
        yield Section(f"The edit of the {axis} span (bench/good -> {variant})", diff)
    if parts[0] == "hesitation":
        other = next((r for v, r in others.items() if v.startswith("hesitation/")), None)
        if other is not None:
            pre, post = (spec, other.spec) if parts[-1] == "pre" else (other.spec, spec)
            marker = (spec.get("meta") or {}).get("marker", "")
            title = f"The hesitation cut (marker {marker!r}): pre -> post"
            yield Section(title, word_diff(_rationale(pre), _rationale(post)))


def _detail(found: StoredRecord, others: Mapping[str, StoredRecord]) -> Detail:
    """An elicitation's page (module docstring) with its counterparts' records."""
    spec, out = found.spec, found.readouts
    problem = spec["problem"]
    labels = {
        "model": str(spec["model"]),
        "problem": str(problem["id"]),
        "benchmark": str(problem["benchmark"]),
        "variant": str(spec["variant"]),
        "share hidden": f"{float(spec.get('share') or 0.0):.2f}",
        "gold": str(problem.get("gold", "")),
    }
    values = {name: _text(out.get(name)) for name in ("expected", "mass", "coverage", "readout")}
    charts = tuple(
        Chart(
            f"{variant}: expected {_text(record.readouts.get('expected'))}",
            _bars(record.readouts.get("probs")),
        )
        for variant, record in others.items()
    )
    sections = (_trajectory(spec), *_edits(spec, others))
    return Detail(
        key=found.key,
        labels=labels,
        prompt=str(problem.get("question", "")),
        bars=_bars(out.get("probs")),
        values=values,
        raw_text=json.dumps(found.raw, indent=1, default=str),
        sections=sections,
        charts=charts,
        image=False,
    )


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return f"{value:.3f}" if isinstance(value, float) else str(value)
