"""What a protocol answers after its run: :class:`ProtocolFace`.

A protocol package declares its face beside its run :class:`~clearsight.driver.Protocol` value,
and :mod:`clearsight.faces` registers it under the names of the runs it answers for. Each part
is optional: a run of a protocol without a report page has none, and a feature asked of a
protocol that lacks its part says so (:meth:`ProtocolFace.need`).

* ``report``: the run's report (``report.html``, ``summary.md``, ``summary.csv``) from a
  :class:`ReportRequest`, its pages composed from the protocol's own analysis;
* ``describe``: the text ``clearsight report`` prints of a run that has no page (a TGS-Bench
  build: its pool's retention);
* ``reask``: the item kind ``clearsight verify`` asks again and how
  (:class:`~clearsight.faces.verifying.Reaskable`);
* ``derive``: per item kind, its read-outs derived again from a record's raw output
  (``clearsight verify --readouts``);
* ``card``: the run's section of a card (:class:`~clearsight.faces.card.CardSection`);
* ``card_run``: how the protocol takes part in ``clearsight card`` and ``clearsight board``
  (:class:`~clearsight.faces.card_run.CardRun`: its parts, its run, what a board pairs);
* ``rows``: the run's records as typed rows, one per finished item, each with its item's
  ``key`` (export; given keys, those items' rows only: the sample's, :class:`RowsOf`);
* ``serve``: what ``clearsight serve`` shows of the protocol's runs
  (:class:`~clearsight.faces.serving.Serving`: the human sessions it hosts, a record's
  conversation, the records it withholds);
* ``shown``: the image the model was shown for each of some items, as PNG by key (an item
  shown none left out), from the run's directory and the items' stored specs (the sample of
  the export's details dataset and of the trackers' tables);
* ``compare``: two runs of one design matched item by item (``clearsight compare``: run A, run
  B, the tolerance, the bootstrap's draws and seed);
* ``view``: the run as ``clearsight view`` shows it (:class:`~clearsight.faces.viewing.RunView`:
  its curve points, listings of their items, one item and the image it was shown).

A report may also say what its analysis measured (:class:`Measured`: the card's numbers and
the per-level points of its curves) to the ``measured`` listener of its :class:`ReportRequest`,
so that an experiment tracker (:mod:`clearsight.track`) logs the report's own numbers without
analysing the run a second time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from clearsight.pages.output import NO_APPENDIX, Appendix
from clearsight.validate import InputError

if TYPE_CHECKING:
    import pandas as pd

    from clearsight.faces.card import CardSection, Number
    from clearsight.faces.card_run import CardRun
    from clearsight.faces.comparison import Comparison
    from clearsight.faces.serving import Serving
    from clearsight.faces.verifying import Derive, Reaskable
    from clearsight.faces.viewing import RunView
    from clearsight.pages.output import ReportPaths

__all__ = [
    "NO_APPENDIX",
    "Appendix",
    "LevelPoint",
    "Measured",
    "ProtocolFace",
    "ReportRequest",
    "Row",
    "RowsOf",
    "Scalar",
    "frame_rows",
]

#: A value of an exported row.
Scalar = str | int | float | bool | None
#: One exported row: column -> value.
Row = Mapping[str, Scalar]

T = TypeVar("T")


class RowsOf(Protocol):
    """A face's ``rows``: the typed rows of the run in ``run_dir``, all of them or (``keys``)
    those of these items only, their values as in the whole run's rows (a value derived over
    the run, such as the sweep's bootstrap ``cluster``, is the whole run's)."""

    def __call__(self, run_dir: Path, keys: Collection[str] | None = None) -> Iterator[Row]:
        """The rows (see the class docstring)."""


@dataclass(frozen=True)
class LevelPoint:
    """One point of a per-level curve: the ``series`` it belongs to (labels from the most
    general, the model, to what is measured: ``("observer", "fog", "identify", "mcq.reason",
    "accuracy")``), the level's index in its arm (``step``), the level itself (``level``, in
    the unit ``level_name`` says: ``level_m``) and the value measured there."""

    series: tuple[str, ...]
    step: int
    level: float
    level_name: str
    value: float


@dataclass(frozen=True)
class Measured:
    """What a report's analysis measured: per model its card numbers (``""``: the run's own,
    for a run of one model) and the points of its per-level curves."""

    numbers: Mapping[str, Sequence[Number]]
    points: tuple[LevelPoint, ...] = ()


@dataclass(frozen=True)
class ReportRequest:
    """What ``clearsight report`` was asked for: the run, where the files go (None: its run
    directory), further runs shown beside it, the bootstrap's draws and seed (None: the
    protocol's own defaults), whether example images are drawn and the :class:`Appendix`;
    ``measured``, where given, hears what the report's analysis measured (a report that does
    not say it leaves its caller to ask the card)."""

    run_dir: Path
    out_dir: Path | None = None
    others: tuple[Path, ...] = ()
    n_boot: int | None = None
    seed: int | None = None
    thumbnails: bool = True
    appendix: Appendix = NO_APPENDIX
    measured: Callable[[Measured], None] | None = None

    def alone(self, protocol: str) -> None:
        """InputError where runs were given beside a report that shows one run."""
        if self.others:
            raise InputError(
                f"a {protocol} report shows one run; {len(self.others)} others were given"
            )

    def in_place(self, protocol: str) -> None:
        """InputError where another directory was given for a report written into its run's."""
        if self.out_dir is not None and Path(self.out_dir) != Path(self.run_dir):
            raise InputError(
                f"a {protocol} report is written into its run directory {self.run_dir}"
            )


@dataclass(frozen=True)
class ProtocolFace:
    """A protocol's answers after its run (see the module docstring); ``name`` is the
    protocol its reports and messages name."""

    name: str
    report: Callable[[ReportRequest], ReportPaths] | None = None
    describe: Callable[[Path], str] | None = None
    reask: Reaskable[Any] | None = None
    derive: Mapping[str, Derive] = field(default_factory=dict)
    card: Callable[[Path, int, int], CardSection] | None = None
    card_run: CardRun | None = None
    rows: RowsOf | None = None
    serve: Serving | None = None
    shown: Callable[[Path, Mapping[str, Mapping[str, Any]]], Mapping[str, bytes]] | None = None
    compare: Callable[[Path, Path, float, int, int], Comparison] | None = None
    view: Callable[[Path], RunView] | None = None

    def need(self, part: Callable[..., T] | None, what: str) -> Callable[..., T]:
        """``part`` of this face, or an InputError saying that its protocol has no ``what``."""
        if part is None:
            raise InputError(f"a {self.name} run has no {what}")
        return part


def _scalar(value: Any) -> Scalar:
    """A frame's cell as a row's value: numpy scalars as Python's, NaN and NA as None, a value
    that is no scalar (a list of probabilities, a mapping) as its JSON text."""
    import json
    import math

    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item() if getattr(value, "ndim", 0) == 0 else value.tolist()
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    return json.dumps(value, default=str, sort_keys=True)


def frame_rows(frame: pd.DataFrame, keys: Collection[str] | None = None) -> Iterator[Row]:
    """The rows of ``frame`` as typed rows (:func:`_scalar` per cell), in its order; ``keys``:
    only the rows whose ``key`` is one of them (chosen before any row is made: a sample of a
    large run makes a sample's rows)."""
    if keys is not None:
        frame = frame[frame["key"].isin(list(keys))]
    columns = [str(c) for c in frame.columns]
    for values in frame.itertuples(index=False, name=None):
        yield {c: _scalar(v) for c, v in zip(columns, values, strict=True)}
