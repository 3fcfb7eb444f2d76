"""``clearsight export --format eval-results|eee``: each model's card numbers, with their 95 %
bootstrap intervals, as the Hub's ``.eval_results`` entries (parsed by huggingface_hub's own
``parse_eval_result_entries``) and as Every Eval Ever records (validated against its published
schema, vendored in ``tests/fixtures/every_eval_ever``), ``lower_is_better`` as the board ranks
each number."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.export import hub_model_id
from clearsight.export._eee import abs_interval
from clearsight.faces import face_of
from clearsight.faces.card import Number
from clearsight.store import run_protocol

runner = CliRunner()
SCHEMA = Path(__file__).parents[1] / "fixtures" / "every_eval_ever" / "eval.schema.json"
N_BOOT = 200


def card_numbers(run: Path) -> list[Number]:
    """The run's card numbers with a value (what the board ranks), by the same bootstrap."""
    face = face_of(run_protocol(run))
    section = face.need(face.card, "card")(run, N_BOOT, 0)
    numbers = [*section.numbers, *(n for ns in section.by_model.values() for n in ns)]
    return [
        n
        for n in numbers
        if math.isfinite(n.estimate) and n.bound not in ("undefined", "undetermined")
    ]


def export(run: Path, out: Path, fmt: str, *extra: str) -> list[Path]:
    args = ["export", str(run), "--format", fmt, "--out", str(out), "--n-boot", str(N_BOOT)]
    result = runner.invoke(app, [*args, *extra])
    assert result.exit_code == 0, result.output
    return [Path(line.removeprefix("wrote ")) for line in result.output.splitlines()]


def validated(path: Path) -> dict[str, object]:
    """An EEE record, checked against the published schema."""
    jsonschema = pytest.importorskip("jsonschema")
    record = json.loads(path.read_text())
    jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(record)
    return dict(record)


#: The direction each card number is better in, written out: accuracy and TGS higher, V*_acc,
#: AURC and ECE lower, W nearest 0 (exported as |W|, lower).
LOWER = {"V*_acc": True, "AURC": True, "ECE": True, " W ": True, "accuracy": False, "TGS": False}


def lower_is_better(key: str) -> bool:
    return next(v for k, v in LOWER.items() if k in f" {key} ")


@pytest.mark.parametrize(
    ("which", "extra"),
    [("sweep_run", ()), ("grounding_run", ("--model", "hf:org/tgs-model")), ("probe_run", ())],
)
def test_eval_results_and_eee_hold_the_card_numbers(
    which: str, extra: tuple[str, ...], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from huggingface_hub import parse_eval_result_entries

    run: Path = request.getfixturevalue(which)
    numbers = {n.key: n for n in card_numbers(run)}
    assert numbers, "the run has card numbers"
    protocol = face_of(run_protocol(run)).name
    (yaml_path,) = export(run, tmp_path / "hub", "eval-results", *extra)
    assert yaml_path.name == f"clearsight-{protocol}.yaml"
    assert yaml_path.parent.name == ".eval_results"
    entries = parse_eval_result_entries(yaml.safe_load(yaml_path.read_text()))
    assert len(entries) == len(numbers)
    for entry, number in zip(entries, numbers.values(), strict=True):
        assert entry.dataset_id == f"clearsight-{protocol}"
        assert entry.value == pytest.approx(number.estimate, abs=1e-12)
        assert entry.notes is not None
        assert number.key in entry.notes
        assert f"[{number.low:.6g}, {number.high:.6g}]" in entry.notes
        assert "clearsight 0.1.0" in entry.notes
    (eee_path,) = export(run, tmp_path / "eee", "eee", *extra)
    record = validated(eee_path)
    results = record["evaluation_results"]
    assert isinstance(results, list)
    assert len(results) == len(numbers)
    for result in results:
        number = numbers[result["evaluation_name"]]
        config, score = result["metric_config"], result["score_details"]
        assert config["lower_is_better"] is lower_is_better(number.key)
        signed = " W " in f" {number.key} "
        est = abs(number.estimate) if signed else number.estimate
        assert score["score"] == pytest.approx(est, abs=1e-12)
        low, high = abs_interval(number.low, number.high) if signed else (number.low, number.high)
        interval = score["uncertainty"]["confidence_interval"]
        assert (interval["lower"], interval["upper"]) == pytest.approx((low, high), abs=1e-12)
        assert interval["confidence_level"] == pytest.approx(0.95)
        assert score["uncertainty"]["num_samples"] == number.n
        assert score["uncertainty"]["num_bootstrap_samples"] == N_BOOT


def test_a_run_whose_numbers_name_no_model_needs_one(grounding_run: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["export", str(grounding_run), "--format", "eee", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "name no model: give the model they are of (--model NAME)" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_hub_model_is_filed_under_its_developer(grounding_run: Path, tmp_path: Path) -> None:
    model = "hf:HuggingFaceTB/SmolVLM-256M-Instruct"
    args = ("--model", model, "--hub", "me/clearsight-details")
    (path,) = export(grounding_run, tmp_path, "eee", *args)
    parts = path.relative_to(tmp_path).parts
    assert parts[:5] == (
        "eee",
        "data",
        "clearsight-grounding",
        "HuggingFaceTB",
        "SmolVLM-256M-Instruct",
    )
    record = validated(path)
    assert record["model_info"] == {
        "name": model,
        "id": "HuggingFaceTB/SmolVLM-256M-Instruct",
        "developer": "HuggingFaceTB",
        "additional_details": {
            "deployment_type": "unknown",
            "model_availability": "unknown",
            "clearsight_model": model,
        },
    }
    sources = {json.dumps(r["source_data"], sort_keys=True) for r in record["evaluation_results"]}
    assert sources == {
        json.dumps(
            {
                "dataset_name": "clearsight-grounding",
                "source_type": "hf_dataset",
                "hf_repo": "me/clearsight-details",
            },
            sort_keys=True,
        )
    }
    (yaml_path,) = export(grounding_run, tmp_path, "eval-results", *args)
    from huggingface_hub import parse_eval_result_entries

    entries = parse_eval_result_entries(yaml.safe_load(yaml_path.read_text()))
    assert {e.dataset_id for e in entries} == {"me/clearsight-details"}
    assert {e.source_url for e in entries} == {
        "https://huggingface.co/datasets/me/clearsight-details"
    }
    assert {e.source_name for e in entries} == {"clearsight 0.1.0"}


def test_abs_interval_is_the_image_under_the_absolute_value() -> None:
    assert abs_interval(-0.5, 0.25) == (0.0, 0.5)
    assert abs_interval(0.1, 0.3) == (0.1, 0.3)
    assert abs_interval(-0.3, -0.1) == (0.1, 0.3)


def test_hub_model_ids() -> None:
    assert (
        hub_model_id("hf:HuggingFaceTB/SmolVLM-256M-Instruct")
        == "HuggingFaceTB/SmolVLM-256M-Instruct"
    )
    assert hub_model_id("observer") is None
    assert hub_model_id("scripted:/tmp/a/b.json") is None
    assert hub_model_id("openai:http://127.0.0.1:8000/v1#m") is None


def test_w_is_exported_as_its_absolute_value(tmp_path: Path) -> None:
    """A face whose card gives a signed W (negative, its interval across 0): EEE holds |W| with
    the image interval and lower_is_better, the signed W in its details; the Hub's entry the
    signed W."""
    from clearsight.faces import register
    from clearsight.faces.card import CardSection
    from clearsight.faces.face import ProtocolFace
    from clearsight.store import Record, RunStore

    w = Number("fog W internal", -0.25, -0.5, 0.125, "-0.25 [-0.50, +0.12]", "exact", 12)
    acc = Number("clean accuracy", 0.75, 0.5, 1.0, "0.75 [0.50, 1.00]", "", 12)
    section = CardSection("w", numbers=(w, acc))
    register("export-w", ProtocolFace("export-w", card=lambda run, n_boot, seed: section))
    run = tmp_path / "run"
    with RunStore.open(run) as store:
        store.begin_run({"protocol": "export-w", "config": {}})
        store.add_items([("a", "export-w", {"n": 1})])
        store.write_records([Record("a", "ok", None, {}, {}, 0.0)])
    (path,) = export(run, tmp_path / "out", "eee", "--model", "m")
    w_result, acc_result = validated(path)["evaluation_results"]  # type: ignore[misc]
    assert w_result["metric_config"]["metric_name"] == "|fog W internal|"
    assert w_result["metric_config"]["lower_is_better"] is True
    assert w_result["score_details"]["score"] == pytest.approx(0.25, abs=1e-12)
    interval = w_result["score_details"]["uncertainty"]["confidence_interval"]
    assert (interval["lower"], interval["upper"]) == pytest.approx((0.0, 0.5), abs=1e-12)
    assert w_result["score_details"]["details"]["signed_estimate"] == "-0.25"
    assert acc_result["metric_config"]["lower_is_better"] is False
    (yaml_path,) = export(run, tmp_path / "out", "eval-results", "--model", "m")
    values = [e["value"] for e in yaml.safe_load(yaml_path.read_text())]
    assert values == pytest.approx([-0.25, 0.75], abs=1e-12)
