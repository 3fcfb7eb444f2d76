"""Issue 33: what the models cost — model seconds, prompt and completion tokens and images —
read from every record's raw output, per model as totals and per-record medians, in every
report (sweep, grounding, probe) and on the card; summary.csv keeps its columns."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.pages.cost import cost_display, cost_html, cost_markdown
from clearsight.report import build_report
from clearsight.store import MEASURES, RunStore, cost_table, record_cost, run_cost, spec_model
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import run_sweep


def test_a_records_cost_sums_the_replies_it_holds() -> None:
    raw = {
        "usage": {"prompt_tokens": 30, "completion_tokens": 2, "images": 1},
        "latency_s": 0.25,
        "turns": [
            {"reply": {"latency_s": 0.5, "calls": 1}},
            {"reply": None, "images": 7},  # "images" outside a usage is not a count of images
            {"slot": {"prompt_tokens": 12, "hidden": True}},
        ],
        "flag": {"latency_s": True},  # a bool is no number
    }
    assert record_cost(raw) == {
        "model_s": 0.75,
        "prompt_tokens": 42.0,
        "completion_tokens": 2.0,
        "images": 1.0,
    }
    assert record_cost({"texts": ["A"]}) == {}
    assert record_cost(None) == {}


_maybe = st.one_of(st.none(), st.integers(0, 5000))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["m1", "m2", None]), _maybe, _maybe, _maybe, _maybe),
        min_size=1,
        max_size=30,
    )
)
def test_totals_are_sums_and_medians_are_numpys(rows: list[tuple[Any, ...]]) -> None:
    def raw(ms: int | None, pt: int | None, ct: int | None, im: int | None) -> dict[str, Any]:
        usage = {k: v for k, v in zip(MEASURES[1:], (pt, ct, im), strict=True) if v is not None}
        return {"usage": usage, **({} if ms is None else {"latency_s": ms / 1000})}

    table = cost_table((m, raw(*values)) for m, *values in rows)
    models = [m for m in dict.fromkeys(r[0] for r in rows) if m is not None]
    assert list(table["model"]) == models  # no model: left out
    for model in models:
        row = table.set_index("model").loc[model]
        mine = [r[1:] for r in rows if r[0] == model]
        assert row["records"] == len(mine)
        for i, measure in enumerate(MEASURES):
            values = np.array(
                [v[i] / (1000 if i == 0 else 1) for v in mine if v[i] is not None], dtype=float
            )
            assert row[f"{measure}_n"] == values.size
            if values.size == 0:
                assert math.isnan(row[f"{measure}_total"])
                assert math.isnan(row[f"{measure}_median"])
            else:
                assert row[f"{measure}_total"] == pytest.approx(values.sum(), rel=1e-12)
                assert row[f"{measure}_median"] == pytest.approx(np.median(values), rel=1e-12)


def _scripted_sweep(tmp_path: Path) -> Path:
    """A one-scene sweep through a scripted model whose replies carry seconds and tokens."""
    script = tmp_path / "model.jsonl"
    answers = [
        {
            "texts": ["A"],
            "candidate_probs": {"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1},
            "usage": {"prompt_tokens": 100 + 7 * i, "completion_tokens": 1 + i % 2, "images": 1},
            "latency_s": 0.125 * (i + 1),
        }
        for i in range(9)
    ]
    script.write_text("".join(json.dumps(a) + "\n" for a in answers))
    config = SweepConfig(
        models=(f"scripted:{script}",),
        scene_ids=("skimage-chelsea",),
        arms=("fog",),
        tasks=("identify",),
        wordings=("mcq.reason",),
        controls=("clean",),
    )
    run = tmp_path / "run"
    run_sweep(config, run, progress=False)
    return run


def test_the_sweep_report_shows_each_models_cost(tmp_path: Path) -> None:
    run = _scripted_sweep(tmp_path)
    with RunStore.open(run, read_only=True) as store:
        raws = [r.raw for r in store.iter_records() if r.spec.get("model")]
    model = f"scripted:{tmp_path / 'model.jsonl'}"
    cost = run_cost(run, spec_model("model")).set_index("model").loc[model]
    seconds = np.array([r["latency_s"] for r in raws])
    prompt = np.array([r["usage"]["prompt_tokens"] for r in raws])
    assert cost["records"] == len(raws) == 9
    assert cost["model_s_total"] == pytest.approx(seconds.sum(), rel=1e-12)
    assert cost["model_s_median"] == pytest.approx(np.median(seconds), rel=1e-12)
    assert cost["prompt_tokens_total"] == prompt.sum() == sum(100 + 7 * i for i in range(9))
    assert cost["prompt_tokens_median"] == np.median(prompt)
    assert cost["images_total"] == 9

    paths = build_report(run, n_boot=20, thumbnails=False)
    md = paths.summary_md.read_text(encoding="utf-8")
    section = md[md.index("## Cost") :]
    total_s, median_s = f"{seconds.sum():,.2f}", f"{np.median(seconds):,.2f}"
    assert f"| 9 | {total_s} | {median_s} | {prompt.sum():,.0f} | {np.median(prompt):,.1f} |" in (
        section
    )
    html = paths.html.read_text(encoding="utf-8")
    assert "id='cost'" in html
    assert total_s in html[html.index("id='cost'") :]
    header = paths.summary_csv.read_text(encoding="utf-8").splitlines()[0]
    assert "model_s" not in header
    assert "tokens" not in header


def test_a_probe_report_shows_its_sensors_seconds(tmp_path: Path) -> None:
    from clearsight.probe.protocol import run_probe
    from fixtures.probe_runs import probe_config

    (scripts := tmp_path / "scripts").mkdir()
    run = tmp_path / "probe"
    run_probe(probe_config(scripts), run, progress=False)
    with RunStore.open(run, read_only=True) as store:
        seconds = [
            sum(t["reply"]["latency_s"] for t in r.raw["turns"] if t.get("reply"))
            for r in store.iter_records()
        ]
    paths = build_report(run)
    md = paths.summary_md.read_text(encoding="utf-8")
    sensor = f"scripted:{scripts / 'sensor.jsonl'}"
    cost = run_cost(run, spec_model("sensor")).set_index("model").loc[sensor]
    assert cost["records"] == len(seconds) == 8
    assert cost["model_s_total"] == pytest.approx(sum(seconds), rel=1e-12)
    assert math.isnan(cost["prompt_tokens_total"])  # a probe episode records no tokens
    assert "## Cost" in md
    assert f"| {sensor} | – | 8 | {sum(seconds):,.2f} |" in md.replace("\\", "")


def test_the_grounding_report_and_the_card_render_a_cost_table() -> None:
    from clearsight.card.numbers import card_cost, cost_json
    from clearsight.card.page import render_card
    from clearsight.grounding import GroundingAnalysis
    from clearsight.grounding.page.report import summary_markdown

    cost = cost_table(
        [("hf:m", {"usage": {"prompt_tokens": 10, "images": 1}, "latency_s": 2.0})] * 3
    )
    analysis = GroundingAnalysis(name="g", n_elicitations=0, n_trajectories=0, failures={})
    md = summary_markdown(replace(analysis, cost=cost))
    assert "| hf:m | – | 3 | 6.00 | 2.00 | 30 | 10.0 | – | – | 3 | 1.0 |" in md
    both = card_cost({"sweep": cost, "grounding": None, "probe": cost.iloc[:0]})
    assert list(both["model"]) == ["hf:m (sweep)"]
    assert cost_json(both)[0]["completion_tokens_total"] is None
    card = {"model": "hf:m", "roles": {}, "reports": {}, "manifest_hash": "h"}
    page = render_card(card, {}, [], [], both)
    assert "<h2 id='cost'>Cost</h2>" in page
    assert "hf:m (sweep)" in page
    assert cost_display(None).empty
    assert "(no data in this run)" in cost_html(None)
    assert cost_markdown(cost)[0] == "## Cost"


def test_the_device_a_model_was_loaded_on_is_in_the_manifest_and_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver loads every model before the run; what a backend says of itself (``info``:
    an hf backend's device and dtype) is the manifest's ``loaded_models``, shown in the sweep
    report's provenance table and beside each model's cost. A backend that says nothing has
    no entry."""
    from clearsight.models.scripted import ScriptedBackend

    info = {"device": "cuda:0", "dtype": "bfloat16", "model_type": "tiny"}
    monkeypatch.setattr(ScriptedBackend, "info", property(lambda self: info), raising=False)
    run = _scripted_sweep(tmp_path)
    model = f"scripted:{tmp_path / 'model.jsonl'}"
    with RunStore.open(run, read_only=True) as store:
        assert store.manifest()["loaded_models"] == {model: info}
    assert run_cost(run, spec_model("model"))["device"].tolist() == ["cuda:0, bfloat16"]
    paths = build_report(run, n_boot=20, thumbnails=False)
    html = paths.html.read_text(encoding="utf-8")
    assert f"<tr><td>devices</td><td>{model}: cuda:0, bfloat16</td></tr>" in html
    assert f"| {model} | cuda:0, bfloat16 | 9 |" in paths.summary_md.read_text(encoding="utf-8")


def test_a_backend_that_says_nothing_of_its_device_is_not_recorded(tmp_path: Path) -> None:
    from clearsight.pages.cost import devices_line

    run = _scripted_sweep(tmp_path)
    with RunStore.open(run, read_only=True) as store:
        manifest = store.manifest()
    assert "loaded_models" not in manifest
    assert devices_line(manifest) == "(not recorded)"
    assert run_cost(run, spec_model("model"))["device"].tolist() == [None]
    ray_run = {"loaded_models": {"hf:m": {"batch_sizes": {"text": {"rows": 8, "how": "cpu"}}}}}
    assert devices_line(ray_run) == "(not recorded)"  # a Ray run's entry: auto's sizes only


def test_a_measure_only_some_records_carry_says_how_many() -> None:
    cost = cost_table(
        [("hf:m", {"usage": {"prompt_tokens": 10}, "latency_s": 0.5})]
        + [("hf:m", {"prompt_tokens": 20})] * 2
    )
    row = cost_display(cost).iloc[0]
    assert row["model s total"] == "0.50 (1 of 3)"
    assert row["prompt tokens total"] == "50"  # every record carries it
    assert row["prompt tokens median"] == "20.0"
    assert row["images total"] == "–"
