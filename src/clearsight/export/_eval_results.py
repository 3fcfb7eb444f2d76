"""The Hub's evaluation results of a model repository: ``.eval_results/<benchmark>.yaml``, a
list of entries (``dataset`` with its ``id`` and ``task_id``, ``value``, ``source``, ``notes``:
the format ``huggingface_hub.parse_eval_result_entries`` reads), one per card number of the
model. The format has no field for an interval: each entry's ``notes`` gives the 95 %
bootstrap interval, the items it rests on, which direction is better and the clearsight version.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import yaml

from clearsight.export._files import Files, slug

if TYPE_CHECKING:
    from clearsight.export._numbers import Metric, ModelNumbers
    from clearsight.export._source import ExportRun

__all__ = ["eval_results_files", "eval_results_path", "metric_id"]

#: How each direction of :func:`clearsight.card.board.better` reads in a note.
BETTER_TEXT = {
    "high": "higher is better",
    "low": "lower is better",
    "zero": "|W| nearer 0 is better",
}


def metric_id(key: str) -> str:
    """A card number's key as an id: lower case, each run of other characters one ``_``
    (``fog V*_acc`` -> ``fog_v_acc``)."""
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def eval_results_path(run: ExportRun) -> str:
    """The path of the run's file inside a model repository."""
    return f".eval_results/{run.benchmark}.yaml"


def _entry(run: ExportRun, metric: Metric, dataset: str, hub: str | None, n_boot: int) -> Any:
    n = metric.number
    interval = metric.interval
    spread = (
        f"95 % bootstrap interval [{interval[0]:.6g}, {interval[1]:.6g}] ({n_boot} draws)"
        if interval
        else "no finite interval"
    )
    notes = (
        f"{n.key}: {n.text}; {spread}, {n.n} items; {BETTER_TEXT[metric.best]}; "
        f"clearsight {run.version}, run {run.run_dir.name}"
    )
    entry: dict[str, Any] = {
        "dataset": {"id": dataset, "task_id": metric_id(n.key)},
        "value": n.estimate,
        "notes": notes,
    }
    if hub is not None:
        entry["source"] = {
            "url": f"https://huggingface.co/datasets/{hub}",
            "name": f"clearsight {run.version}",
        }
    return entry


def eval_results_files(
    run: ExportRun, numbers: list[ModelNumbers], hub: str | None, n_boot: int
) -> Files:
    """Per model, ``models/<model>/.eval_results/<benchmark>.yaml`` (the file its model
    repository takes); its entries' dataset is ``hub`` (the details dataset) or the benchmark."""
    dataset = hub or run.benchmark
    files = {}
    for found in numbers:
        entries = [_entry(run, m, dataset, hub, n_boot) for m in found.metrics]
        text = yaml.safe_dump(entries, sort_keys=False, allow_unicode=True)
        files[f"models/{slug(found.model)}/{eval_results_path(run)}"] = text.encode("utf-8")
    return files
