"""Every Eval Ever records: one aggregate record per model of the run, in the layout of its
datastore (``data/<benchmark>/<developer>/<model>/<uuid>.json``), following its schema 0.3.0
(``eval.schema.json`` of github.com/evaleval/every_eval_ever). Each card number is one
evaluation result: its score, the 95 % bootstrap interval as the uncertainty and whether a
lower score is better. W, whose best is no gap at all (|W| nearest 0), is recorded as |W|
(lower is better), its interval the image of W's under the absolute value, the signed W in the
result's details."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from typing import TYPE_CHECKING, TypedDict

from pydantic import JsonValue

from clearsight.export._eval_results import metric_id
from clearsight.export._files import Files, slug
from clearsight.export._repo_ids import hub_model_id

if TYPE_CHECKING:
    from clearsight.export._numbers import Metric, ModelNumbers
    from clearsight.export._source import ExportRun

__all__ = ["SCHEMA_VERSION", "abs_interval", "eee_files"]

#: The version of Every Eval Ever's schema these records follow.
SCHEMA_VERSION = "0.3.0"


def abs_interval(low: float, high: float) -> tuple[float, float]:
    """The image of ``[low, high]`` under the absolute value."""
    if low <= 0.0 <= high:
        return 0.0, max(-low, high)
    return min(abs(low), abs(high)), max(abs(low), abs(high))


def _score(metric: Metric, n_boot: int) -> tuple[dict[str, JsonValue], dict[str, JsonValue]]:
    """A number's ``metric_config`` and ``score_details``."""
    n, signed = metric.number, metric.best == "zero"
    config: dict[str, JsonValue] = {
        "metric_id": f"clearsight.{'abs_' if signed else ''}{metric_id(n.key)}",
        "metric_name": f"|{n.key}|" if signed else n.key,
        "lower_is_better": metric.best != "high",
        "additional_details": {"best": metric.best},
    }
    details: dict[str, JsonValue] = {"text": n.text, "bound": n.bound}
    if signed:
        details["signed_estimate"] = repr(n.estimate)
    score: dict[str, JsonValue] = {
        "score": abs(n.estimate) if signed else n.estimate,
        "details": details,
    }
    uncertainty: dict[str, JsonValue] = {"num_samples": n.n, "num_bootstrap_samples": n_boot}
    if (interval := metric.interval) is not None:
        low, high = abs_interval(*interval) if signed else interval
        uncertainty["confidence_interval"] = {
            "lower": low,
            "upper": high,
            "confidence_level": 0.95,
            "method": "bootstrap",
        }
    score["uncertainty"] = uncertainty
    return config, score


class ModelInfo(TypedDict):
    """A record's ``model_info``: the model's name, its Hub id (or its name), its developer and
    how it is deployed."""

    name: str
    id: str
    developer: str
    additional_details: dict[str, str]


def _model_info(model: str) -> ModelInfo:
    """A model's ``model_info``: its Hub id and developer where its spec names one."""
    hub_id = hub_model_id(model)
    return {
        "name": model,
        "id": hub_id or model,
        "developer": hub_id.split("/")[0] if hub_id else "unknown",
        "additional_details": {
            "deployment_type": "unknown",
            "model_availability": "unknown",
            "clearsight_model": model,
        },
    }


def _result(metric: Metric, source: dict[str, JsonValue], n_boot: int) -> dict[str, JsonValue]:
    """One card number as an evaluation result."""
    config, score = _score(metric, n_boot)
    return {
        "evaluation_result_id": metric_id(metric.number.key),
        "evaluation_name": metric.number.key,
        "source_data": source,
        "metric_config": config,
        "score_details": score,
    }


def _record(
    run: ExportRun, found: ModelNumbers, hub: str | None, n_boot: int, now: str
) -> tuple[str, dict[str, object]]:
    """One model's record and its path in the datastore's layout (its file name a UUID of the
    run's manifest and the model, so a second export replaces the first)."""
    info = _model_info(found.model)
    source: dict[str, JsonValue] = {"dataset_name": run.benchmark, "source_type": "other"}
    if hub:
        source.update(source_type="hf_dataset", hf_repo=hub)
    record: dict[str, object] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": f"{run.benchmark}/{info['id']}/{now}",
        "retrieved_timestamp": now,
        "source_metadata": {
            "source_name": "clearsight",
            "source_type": "evaluation_run",
            "source_organization_name": hub.split("/")[0] if hub else "unknown",
            "evaluator_relationship": "third_party",
        },
        "model_info": info,
        "eval_library": {
            "name": "clearsight",
            "version": run.version,
            "additional_details": {"protocol": run.face.name, "git_revision": run.revision},
        },
        "evaluation_results": [_result(m, source, n_boot) for m in found.metrics],
    }
    digest = hashlib.sha256(
        json.dumps([run.manifest, found.model], sort_keys=True, default=str).encode()
    ).digest()
    name = uuid.UUID(bytes=digest[:16], version=4)
    where = f"{slug(info['developer'])}/{slug(info['id'].split('/')[-1])}"
    return f"data/{run.benchmark}/{where}/{name}.json", record


def eee_files(run: ExportRun, numbers: list[ModelNumbers], hub: str | None, n_boot: int) -> Files:
    """Per model of ``numbers``, its record under ``eee/`` (the datastore's layout)."""
    now = str(int(time.time()))
    files = {}
    for found in numbers:
        path, record = _record(run, found, hub, n_boot, now)
        files[f"eee/{path}"] = (json.dumps(record, indent=2, allow_nan=False) + "\n").encode()
    return files
