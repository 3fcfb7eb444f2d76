"""Common-valid populations (issue 46 item 8): a report over several runs draws the masking
curve (Figs. 11/12) and ECE against TGS (Figs. 15/16) on the items valid for every method,
stating n, and keeps each run's own valid items in Table 2. Two hand-built runs whose valid
items differ; every number below computed by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from clearsight.grounding.analysis import analyse_runs
from clearsight.grounding.results import GroundingResults
from clearsight.grounding.tgs import MASK_RATIOS, bench_variant, self_variant

TOL = 1e-9
PROBLEMS = ("p0", "p1", "p2", "p3")


def _one_hot(e: float) -> list[float]:
    """The 11-way distribution with all its mass on the numeral nearest 10 e."""
    return [1.0 if k == round(10 * e) else 0.0 for k in range(11)]


def _run(
    name: str,
    visible: tuple[float, ...],
    masked: float,
    vision_bad: tuple[float | None, ...],
    correct: dict[str, bool],
    missing: frozenset[tuple[str, str]] = frozenset(),
) -> GroundingResults:
    """One run of one benchmark: E(r) = ``visible`` for r < 1 and ``masked`` at r = 1; the
    good side 0.7, the vision bad side ``vision_bad`` (None: not elicited), the reasoning bad
    side 0.5 and the answer bad side 0.1; ``missing`` (problem, variant) not elicited."""
    rows = []
    for i, problem in enumerate(PROBLEMS):
        values: dict[str, float | None] = {
            self_variant(r): visible[i] if r < 1 else masked for r in MASK_RATIOS
        }
        values |= {bench_variant(None): 0.7, bench_variant("vision"): vision_bad[i]}
        values |= {bench_variant("reasoning"): 0.5, bench_variant("answer"): 0.1}
        rows += [
            {"problem": problem, "benchmark": "b", "variant": v, "expected": e}
            | {"readout": "verbalize", "probs": _one_hot(e)}
            for v, e in values.items()
            if e is not None and (problem, v) not in missing
        ]
    trajs = pd.DataFrame(
        {"problem": list(correct), "benchmark": "b", "correct": list(correct.values())}
    )
    return GroundingResults(name, pd.DataFrame(rows), trajs, {}, {})


def _pair() -> tuple[GroundingResults, GroundingResults]:
    """``base`` valid on every item; ``other`` lacks p3's r = 0.5 (masking), p0's vision bad
    side and p3's own answer (calibration)."""
    base = _run(
        "base",
        (0.9, 0.8, 0.7, 0.2),
        0.5,
        (0.2, 0.6, 0.6, 0.6),
        {"p0": True, "p1": True, "p2": False, "p3": False},
    )
    other = _run(
        "other",
        (0.6, 0.6, 0.6, 0.6),
        0.6,
        (None, 0.65, 0.65, 0.65),
        {"p0": True, "p1": False, "p2": True},
        missing=frozenset({("p3", self_variant(0.5))}),
    )
    return base, other


def test_the_common_population_changes_the_figures_numbers() -> None:
    base, other = _pair()
    a = analyse_runs([base, other], ["base", "other"], n_boot=50)
    common = a.common
    assert common is not None
    assert common.n == {
        "masking": 3,
        "tgs_self": 4,
        "calibration": 3,
        "tgs_pair_vision": 3,
        "tgs_pair_reasoning": 4,
        "tgs_pair_answer": 4,
    }
    assert set(common.methods.values()) == {2}
    mine = common.scores[("base", "verbalize")]
    # the masking curve: base's own over p0..p3 is (0.9 + 0.8 + 0.7 + 0.2) / 4 = 0.65; on the
    # common items p0..p2 it is 0.8, and its drop at r = 1 (0.5 - 0.8) = -0.3
    assert a.curve[0.0].interval.estimate == pytest.approx(0.65, abs=TOL)
    assert a.curve[0.0].n_items == 4
    assert mine["E_r0.00"].interval.estimate == pytest.approx(0.8, abs=TOL)
    assert mine["E_r0.00"].n_items == 3
    assert mine["dE_r1.00"].interval.estimate == pytest.approx(-0.3, abs=TOL)
    # TGS-self is valid on all four for both: the common value is the own one, 0.15
    own = a.readouts["verbalize"].scores
    assert mine["tgs_self"].interval.estimate == pytest.approx(0.15, abs=TOL)
    assert own["tgs_self"].interval.estimate == pytest.approx(0.15, abs=TOL)
    # TGS-pair vision: own (0.5 + 0.1 * 3) / 4 = 0.2, common (p1..p3) 0.1; the mean over the
    # axes: common (0.1 + 0.2 + 0.6) / 3 = 0.3, own (0.2 + 0.2 + 0.6) / 3
    assert own["tgs_pair_vision"].interval.estimate == pytest.approx(0.2, abs=TOL)
    assert mine["tgs_pair_vision"].interval.estimate == pytest.approx(0.1, abs=TOL)
    assert mine["tgs_pair"].interval.estimate == pytest.approx(0.3, abs=TOL)
    assert own["tgs_pair"].interval.estimate == pytest.approx(1.0 / 3, abs=TOL)
    # ECE (10 right-closed bins, one item each): own (0.1 + 0.2 + 0.7 + 0.2) / 4 = 0.3;
    # on p0..p2 (other has no answer for p3) (0.1 + 0.2 + 0.7) / 3
    assert own["ECE"].interval.estimate == pytest.approx(0.3, abs=TOL)
    assert mine["ECE"].interval.estimate == pytest.approx(1.0 / 3, abs=TOL)
    assert mine["ECE"].n_items == 3
    theirs = common.scores[("other", "verbalize")]
    assert theirs["E_r0.00"].interval.estimate == pytest.approx(0.6, abs=TOL)
    assert theirs["tgs_pair_vision"].interval.estimate == pytest.approx(0.05, abs=TOL)


def test_a_lone_run_is_its_own_common_population() -> None:
    base, _ = _pair()
    a = analyse_runs([base], ["base"], n_boot=50)
    assert a.common is not None
    mine, own = a.common.scores[("base", "verbalize")], a.overall
    for key in ("E_r0.00", "dE_r1.00", "tgs_self", "tgs_pair", "ECE", "AUROC"):
        assert mine[key].interval.estimate == pytest.approx(own[key].interval.estimate, abs=TOL)
        assert mine[key].n_items == own[key].n_items


def test_the_report_states_the_common_populations(tmp_path: Path) -> None:
    from clearsight.grounding.page.report import summary_markdown
    from clearsight.grounding.page.tables import common_frame

    base, other = _pair()
    a = analyse_runs([base, other], ["base", "other"], n_boot=50)
    frame = common_frame(a)
    names = ["base × verbalize (prompting)", "other × verbalize (prompting)"]
    assert list(frame["method"]) == names
    assert str(frame.loc[0, "E(r=0)"]).startswith("0.800")
    summary = summary_markdown(a)
    assert "masking (Figs. 11/12): n = 3 items" in summary
    assert "TGS-pair vision: n = 3 items" in summary


def test_the_figures_draw_the_common_population() -> None:
    from clearsight.grounding.page.figures import ece_tgs_figure, masking_figure

    base, other = _pair()
    a = analyse_runs([base, other], ["base", "other"], n_boot=50)
    assert masking_figure(a) is not None
    assert ece_tgs_figure(a, "tgs_self") is not None
    assert ece_tgs_figure(a, "tgs_pair") is not None
