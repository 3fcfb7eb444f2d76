"""``clearsight grounding report RUN [RUN ...]``: runs of other checkpoints or methods side by
side (issue 36, item 4): Table 2 with a row per run, Figs. 6, 7, 15 and 16, the masking curves
and JSD histograms of every run overlaid; the figures with no overlapping labels and units on
their axes."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from fixtures.grounding_runs import write_grounding_run

runner = CliRunner()

#: Per run: (TGS-self of b1's problems, of b2's, the bad sides' confidences per axis).
RUNS: dict[str, tuple[float, float, dict[str, float]]] = {
    "base": (0.2, 0.1, {"vision": 0.7, "reasoning": 0.6, "answer": 0.4}),
    "calibrated": (-0.1, 0.0, {"vision": 0.68, "reasoning": 0.7, "answer": 0.5}),
}


def _run(root: Path, name: str) -> Path:
    """Six problems of two benchmarks (four in b1, two in b2): the masking curve, one pair per
    axis (good side 0.7), an alternative per axis with its distribution, own answers."""
    tgs_b1, tgs_b2, bad = RUNS[name]
    rows: list[dict[str, Any]] = []
    trajectories = []
    for i in range(6):
        p = {"problem": f"p{i}", "benchmark": "b1" if i < 4 else "b2"}
        visible, peaked, moved = 0.8, [0.0] * 11, [0.0] * 11
        peaked[8] = 1.0
        moved[8 - i % 3] = 1.0  # JSD 0 for one problem of three, else 1 bit
        masked = visible - (tgs_b1 if i < 4 else tgs_b2)
        for r in (0.0, 0.25, 0.5, 0.75, 1.0):
            e = visible + (masked - visible) * r
            rows.append({**p, "variant": f"self/r{r:.2f}", "expected": e, "probs": peaked})
        rows.append({**p, "variant": "bench/good", "expected": 0.7})
        rows += [{**p, "variant": f"bench/{a}/bad", "expected": e} for a, e in bad.items()]
        rows += [
            {**p, "variant": f"variation/{a}/s0", "expected": 0.8, "probs": moved} for a in bad
        ]
        trajectories.append({**p, "correct": i % 2 == 0})
    return write_grounding_run(root / name, rows, trajectories)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("grounding-runs")
    return _run(root, "base"), _run(root, "calibrated")


def test_grounding_report_puts_the_runs_side_by_side(runs: tuple[Path, Path]) -> None:
    base, calibrated = runs
    result = runner.invoke(app, ["grounding", "report", str(base), str(calibrated)])
    assert result.exit_code == 0, result.output
    assert f"report: {base / 'report.html'}" in result.output
    html = unescape((base / "report.html").read_text(encoding="utf-8"))
    table = html.split("<h2>Methods side by side (Table 2)</h2>", 1)[1].split("</table>", 1)[0]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", table)]
    rows = {row[0]: row for row in cells if row}
    # issue 46 item 4: model x method (provenance); these runs record no model: the run's name
    assert list(rows) == [f"{name} × verbalize (prompting)" for name in RUNS]
    rows = {label.split(" × ")[0]: row for label, row in rows.items()}
    for name, (b1, b2, bad) in RUNS.items():
        # TGS-self: each benchmark's mean, then the mean of the two; TGS-pair: per axis
        # 0.7 - bad, then the mean over the axes
        tgs_self = (b1 + b2) / 2
        tgs_pair = sum(0.7 - e for e in bad.values()) / 3
        row = rows[name]
        assert row[3].startswith(f"{tgs_self:+.3f} [")
        assert row[4].startswith(f"{tgs_pair:+.3f} [")
        assert row[-3:] == ["0.333 (n=6)"] * 3  # per axis: JSD 0 for p0 and p3 only
    for caption in ("Fig. 6:", "Fig. 7:", "Fig. 15:", "Fig. 16:"):
        figure = html.split(caption, 1)[0].rsplit("<figure", 1)[1]
        assert "src='data:image/png;base64," in figure
    # Figs. 6, 7, 15 and 16, the JSD histograms, masking curves, risk-coverage (no hesitation)
    assert html.count("src='data:image/png;base64,") == 7
    assert "beside it: the runs calibrated" in html
    assert "tgs_self: this run vs calibrated" in html
    md = (base / "summary.md").read_text(encoding="utf-8")
    assert "## Methods side by side (Table 2)" in md
    assert "| calibrated × verbalize (prompting) |" in md


def test_a_run_of_another_protocol_or_given_twice_is_one_error_line(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    from clearsight.store import RunStore

    base, _ = runs
    with RunStore.open(tmp_path / "sweep") as store:
        store.begin_run({"protocol": "sweep", "config": {}})
    for args, says in (
        ([str(tmp_path / "sweep"), str(base)], "is a sweep run, not a grounding run"),
        ([str(base), str(tmp_path / "sweep")], "is a sweep run"),
        ([str(base), str(base)], "is given twice"),
        ([], "Missing argument"),
    ):
        before = (base / "report.html").stat().st_mtime_ns if (base / "report.html").exists() else 0
        result = runner.invoke(app, ["grounding", "report", *args])
        assert result.exit_code == 2, result.output
        assert says in result.output
        if args:
            assert result.output.startswith("error: ")
            assert len(result.output.strip().splitlines()) == 1
        after = (base / "report.html").stat().st_mtime_ns if (base / "report.html").exists() else 0
        assert after == before  # nothing written
    assert not (tmp_path / "sweep" / "report.html").exists()


def _texts(fig: Any) -> list[Any]:
    """Every text of ``fig`` as drawn: the tick labels within their axis' limits (matplotlib
    keeps, undrawn, those just beyond), axis labels, titles, legend entries, the suptitle."""
    out = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        for axis, at in ((ax.xaxis, 0), (ax.yaxis, 1)):
            lo, hi = sorted(axis.get_view_interval())
            pad = 1e-9 * max(1.0, hi - lo)
            out += [
                t for t in axis.get_ticklabels() if lo - pad <= t.get_position()[at] <= hi + pad
            ]
            out.append(axis.label)
        out += [ax.title, ax._left_title, ax._right_title]
        if ax.get_legend() is not None:
            out += ax.get_legend().get_texts()
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def _overlaps(fig: Any) -> list[tuple[str, str]]:
    """The pairs of texts of ``fig`` whose boxes, as drawn, meet."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in _texts(fig)]
    return [
        (a, b)
        for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2)
        if box_a.overlaps(box_b) and box_a.width > 0 and box_b.width > 0
    ]


def test_the_comparison_figures_have_no_overlapping_labels_and_units_on_their_axes(
    runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import clearsight.grounding.page.figures as figures
    from clearsight.grounding import analyse_grounding
    from clearsight.pages.plots import slant_crowded_ticks

    analysis = analyse_grounding(runs[0], [runs[1]], n_boot=100)
    drawn: dict[str, Any] = {}
    png: Callable[[Any], bytes] = figures.png

    def keep(fig: Any) -> bytes:
        if slant_crowded_ticks(fig):  # what png does first
            fig.tight_layout()
        drawn["fig"] = (_overlaps(fig), [_numeric_labels(ax) for ax in fig.axes])
        return png(fig)

    monkeypatch.setattr(figures, "png", keep)
    made = {
        "Fig. 6": lambda: figures.methods_figure(analysis),
        "Fig. 7": lambda: figures.pair_axes_figure(analysis),
        "Fig. 15": lambda: figures.ece_tgs_figure(analysis, "tgs_self"),
        "Fig. 16": lambda: figures.ece_tgs_figure(analysis, "tgs_pair"),
        "masking": lambda: figures.masking_figure(analysis),
        "JSD": lambda: figures.jsd_figure(analysis),
    }
    for name, draw in made.items():
        drawn.clear()
        assert draw() is not None, name
        overlaps, labels = drawn["fig"]
        assert overlaps == [], (name, overlaps)
        first = labels[0]  # the panels right of it share its y axis
        numeric = [x for x, _ in labels if x is not None] + [first[1]] * (first[1] is not None)
        assert numeric, name
        assert all("(" in label and ")" in label for label in numeric), (name, numeric)


def _numeric_labels(ax: Any) -> tuple[str | None, str | None]:
    """The x and y axis labels of ``ax`` where the axis is numeric (its tick labels numbers),
    None for a categorical one: a numeric axis states its unit or scale in brackets."""

    def numeric(axis: Any) -> bool:
        texts = [t.get_text().replace("−", "-") for t in axis.get_ticklabels()]
        try:
            return bool(texts) and all(float(t) == float(t) for t in texts if t)
        except ValueError:
            return False

    return (
        ax.get_xlabel() if numeric(ax.xaxis) else None,
        ax.get_ylabel() if numeric(ax.yaxis) else None,
    )


def test_the_figures_of_one_run_without_others_stay(runs: tuple[Path, Path]) -> None:
    from clearsight.grounding import build_grounding_report

    paths, analysis = build_grounding_report(runs[1], n_boot=100)
    assert analysis.others == ()
    html = unescape(paths.html.read_text(encoding="utf-8"))
    table = html.split("<h2>Methods side by side (Table 2)</h2>", 1)[1].split("</table>", 1)[0]
    # a single run's method is its read-out
    assert "beside it" not in html
    assert pd.read_csv(paths.summary_csv)["score"].str.startswith("ECE pooled").sum() == 1
    assert "<td class='t'>verbalize (prompting)</td>" in table
