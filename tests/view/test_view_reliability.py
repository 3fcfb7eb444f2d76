"""The reliability diagrams' bins in ``clearsight view``: each bin of each panel the report
draws (:func:`~clearsight.sweep.numbers.panels.reliability_panels`) is a point whose ``n`` and
value are the analysis's count and accuracy of that bin, and whose link lists exactly the
records the analysis counted in it (each record's bin found by the analysis's own binning)."""

from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import numpy.typing as npt
import pandas as pd
from starlette.testclient import TestClient

from clearsight.faces.viewing import Point, Query
from clearsight.metrics import reliability_bins
from clearsight.sweep.face import question_of
from clearsight.sweep.numbers.panels import ReliabilityPanel, asked_panels, reliability_panels
from clearsight.sweep.results import level_label, load_run_data
from clearsight.sweep.view import SweepRunView
from clearsight.view import open_views
from clearsight.view.app import create_view_app

Run = tuple[Path, dict[str, npt.NDArray[np.uint8]]]


def _analysis_bin(confidence: float, correct: float) -> int:
    """The bin (0 to 9) the analysis counts one record in: its own binning, of that record."""
    return int(np.argmax(reliability_bins([confidence], [correct]).count))


def _cut_records(
    records: pd.DataFrame, panel: ReliabilityPanel, level: float | None
) -> pd.DataFrame:
    """The records a panel's cut scores: its model and wording, the clean images and the arm
    (or the arm at ``level``), answered, with a value of the panel's signal."""
    mine = records[(records["model"] == panel.model) & (records["wording"] == panel.wording)]
    if level is None:
        mine = mine[mine["condition"].isin(["clean", panel.arm])]
    else:
        mine = mine[(mine["condition"] == panel.arm) & (mine["level_m"] == level)]
    return mine[(mine["answered"] == 1.0) & mine[panel.signal].notna()]


def _key(filters: object) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(dict(filters).items()))  # type: ignore[call-overload]


def test_each_bin_lists_exactly_the_records_the_analysis_counts_in_it(view_run: Run) -> None:
    run, _ = view_run
    view, data = SweepRunView(run, question_of), load_run_data(run)
    points = {_key(p.filters): p for p in view.points() if "bin" in p.filters}
    checked = 0
    for task in data.records["task"].unique():
        records = data.records[data.records["task"] == task]
        for panel in (
            p for row in asked_panels(reliability_panels(data, task), records) for p in row
        ):
            for cut in (c for c in panel.cuts if c.bins is not None):
                assert cut.bins is not None
                scored = _cut_records(records, panel, cut.level_m)
                bins = [
                    _analysis_bin(c, k)
                    for c, k in zip(scored[panel.signal], scored["correct"], strict=True)
                ]
                for b in range(10):
                    point = _bin_point(points, panel, task, cut.level_m, b)
                    if cut.bins.count[b] == 0:
                        assert point is None
                        continue
                    assert point is not None
                    assert point.n == cut.bins.count[b]
                    assert math.isclose(point.value, cut.bins.accuracy[b], rel_tol=1e-12)
                    listing = view.listing(Query(filters=point.filters, per_page=10**6))
                    expected = {k for k, at in zip(scored["key"], bins, strict=True) if at == b}
                    assert listing.total == point.n
                    assert {r.key for r in listing.rows} == expected
                    checked += 1
    assert checked == len(points)  # every bin shown is one of the report's, each checked
    assert checked > 10


def _bin_point(
    points: dict[tuple[tuple[str, str], ...], Point],
    panel: ReliabilityPanel,
    task: str,
    level: float | None,
    b: int,
) -> Point | None:
    """The viewer's point of bin ``b`` of a panel's cut (None: it shows none)."""
    for point in points.values():
        f = point.filters
        same = (f["model"], f["task"], f["wording"]) == (panel.model, task, panel.wording)
        cut = f.get("pooled") == panel.arm if level is None else f.get("condition") == panel.arm
        at = level is None or f.get("level") == level_label(level)
        if same and cut and at and f["bin"] == f"{b / 10:.1f}-{(b + 1) / 10:.1f}":
            return point
    return None


def test_the_points_page_links_each_bin_to_its_listing(view_run: Run) -> None:
    run, _ = view_run
    client = TestClient(create_view_app(open_views([run])), base_url="http://127.0.0.1")
    view = SweepRunView(run, question_of)
    point = next(p for p in view.points() if "bin" in p.filters)
    page = client.get("/run/0/").text
    query = urlencode(dict(point.filters))
    assert f'href="items?{query.replace("&", "&amp;")}"' in page
    listing = client.get(f"/run/0/items?{query}")
    assert listing.status_code == 200
    assert listing.text.count('data-key="') == min(point.n, 50)
