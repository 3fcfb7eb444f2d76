"""Paper-scale benchmark: the paper's full sweep design planned, stored, resumed and reported.

The design is the paper's: scenes x 24 conditions (clean, fog and water at 8 levels, blank,
shuffled, ImageNet-C severities 1-5) x 3 questions (identify; verify the true and a distractor
category) x 5 wordings x 5 models — 1,800,000 questions for 1000 scenes, plus the model-free
ImageNet-C equivalents (5 a scene) and depth profiles (1 a scene). The scenes are a synthetic
COCO-format set of 1000 distinct images made from the bundled photos (crops, resizes, flips;
deterministic; cached under the cache dir with their ``instances.json``), read by
:mod:`clearsight.scenes.coco` with an assumed depth of 40 m. The five models are fast stand-ins:
the reference observer and four ``scripted:`` models that answer every request with one
fixed response each.

What runs, and what is measured (every figure in this process unless said):

1. A real sweep of the first ``--run-scenes`` scenes (serial executor, all five models): its
   records are real and give ``fraction_items_per_s``.
2. The full design through the one driver (:func:`clearsight.driver.run`) with every unit's
   work replaced by a look-up of the fraction's record of the same model, condition, level,
   question and wording (the store, the driver and the report do not depend on the answers):
   ``plan_and_store_us_per_item_<n>`` is the driver's planning (``plan_sweep``) and storing
   (``RunStore.add_items`` of every stage) per item, at 10 scenes (18,030 items) and at the
   full size; ``to_first_unit_s`` the time from the run's start to its first unit (also the
   models' check, the manifest, the pending keys); ``driver_records_per_s`` the records the
   driver commits per second while units only look their records up;
   ``store_bytes_per_item`` the database (with its WAL) over the items it holds. The
   ``_cpu_`` twins are this process's CPU time instead of wall time: on a shared machine the
   wall time mostly measures the other processes.
3. ``resume_s_finished_run``: ``run_sweep`` of the same config on the finished run (it finds
   the plan's fingerprint and returns without planning).
4. ``report_peak_rss_mb``: peak RSS of ``clearsight report`` on the full run, in a child
   process; ``report_html_kb`` the size of the report it wrote.
5. ``load_run_bytes_per_row``: peak RSS of a child process that calls ``load_run(run)`` (every
   column) minus that of the same child before the call, over the rows it returned.

``--scenes N`` sets the full size (default 1000); ``--quick`` is 5 scenes, 2 run for real.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from _timing import report
from clearsight import driver
from clearsight.driver import Execution
from clearsight.scenes.categories import COCO_CATEGORIES
from clearsight.store import DB_NAME, Record, RunStore, collector_paused
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import SWEEP, run_sweep
from clearsight.sweep.specs import PROTOCOL

# The bundled photos the synthetic set is cut from (every one in the wheels of installed packages).
_PHOTOS = ("skimage-chelsea", "skimage-coffee", "skimage-astronaut", "mpl-grace-hopper")
_STANDINS = (  # the four scripted stand-ins: one fixed answer each, letter and verbal, and
    # the letter probabilities they give a verification question (it offers A, B and abstain C)
    ({"texts": ["A, 90%"], "candidate_probs": {"A": 0.7, "B": 0.2, "C": 0.1}}, {"A": 0.7}),
    ({"texts": ["B, 60%"], "candidate_probs": {"A": 0.2, "B": 0.5, "C": 0.3}}, {"B": 0.5}),
    (
        {"texts": ["C, 30%"], "candidate_probs": {"A": 0.1, "B": 0.1, "C": 0.2, "E": 0.6}},
        {"A": 0.1, "B": 0.1, "C": 0.6},
    ),
    ({"texts": ["D, 75%"], "candidate_probs": {"D": 0.9, "E": 0.1}}, {"B": 0.9, "C": 0.1}),
)
#: Text every verification prompt holds (tasks/prompts/questions.yaml, t3.verify.v1).
_VERIFY = "Is the object in the red box"


def synthetic_coco(root: Path, n: int = 1000) -> tuple[Path, Path]:
    """The synthetic COCO-format set under ``root`` (made once): ``n`` images of 320-480 px cut
    from the bundled photos, one vehicle/outdoor box each; (instances.json, images dir)."""
    images, annotations = root / "images", root / "instances.json"
    if annotations.is_file() and len(json.loads(annotations.read_text())["images"]) == n:
        return annotations, images
    from clearsight.scenes.bundled import load_bundled_scene

    images.mkdir(parents=True, exist_ok=True)
    photos = [load_bundled_scene(i).image for i in _PHOTOS]
    chosen = [
        (cid, name, sup) for cid, name, sup in COCO_CATEGORIES if sup in ("vehicle", "outdoor")
    ]
    rng = np.random.default_rng(0)
    entries, anns = [], []
    for i in range(n):
        photo = photos[i % len(photos)]
        h, w = photo.shape[:2]
        side = int(rng.integers(320, 481))
        ch, cw = int(rng.integers(h // 2, h + 1)), int(rng.integers(w // 2, w + 1))
        y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        img = Image.fromarray(photo[y : y + ch, x : x + cw]).resize((side, side * ch // cw or 1))
        if i % 2:
            img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        if min(img.size) < 320:
            img = img.resize((max(320, img.size[0]), max(320, img.size[1])))
        img.save(images / f"{i:06d}.jpg", quality=85)
        width, height = img.size
        bw, bh = int(width * rng.uniform(0.25, 0.6)), int(height * rng.uniform(0.25, 0.6))
        bx, by = int(rng.integers(2, width - bw - 2)), int(rng.integers(2, height - bh - 2))
        cid = chosen[i % len(chosen)][0]
        entries.append({"id": i + 1, "file_name": f"{i:06d}.jpg", "width": width, "height": height})
        anns.append(
            {
                "id": i + 1,
                "image_id": i + 1,
                "category_id": cid,
                "bbox": [bx, by, bw, bh],
                "area": bw * bh,
                "iscrowd": 0,
            }
        )
    categories = [{"id": c, "name": name, "supercategory": sup} for c, name, sup in COCO_CATEGORIES]
    data = {"images": entries, "annotations": anns, "categories": categories}
    annotations.write_text(json.dumps(data))
    return annotations, images


def design(root: Path, n_scenes: int) -> SweepConfig:
    """The paper's sweep design on the first ``n_scenes`` synthetic scenes, five stand-ins."""
    annotations, images = synthetic_coco(root)
    models = ["observer"]
    for i, (response, verify) in enumerate(_STANDINS):
        path = root / f"standin_{i}.jsonl"
        lines = [
            {"match": _VERIFY, **response, "candidate_probs": verify},
            {"match": "", **response},
        ]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        models.append(f"scripted:{path}")
    return SweepConfig(
        scenes="coco",
        coco_annotations=annotations,
        coco_images=images,
        coco_n=n_scenes,
        coco_depth_model="assumed:40",
        models=models,
    )


# --------------------------------------------------------------------------------------------
# Look-up units: each item gets the fraction's record of its pattern


_RECORDS: dict[tuple[Any, ...], tuple[Any, Any]] = {}
_FIRST_UNIT: list[float] = []  # wall and CPU clock when the first unit ran


def _pattern(kind: str, spec: dict[str, Any]) -> tuple[Any, ...]:
    """What a record's values depend on here, apart from the scene."""
    if kind == PROTOCOL:
        fields = ("model", "condition", "level_m", "severity", "task", "asked", "wording")
        return (kind, *(spec.get(f) for f in fields))
    return (kind, spec.get("severity"))


def _learn(run: Path) -> None:
    """Remember the fraction's ok records by pattern."""
    with RunStore.open(run, read_only=True) as store:
        for r in store.iter_records("ok"):
            _RECORDS.setdefault(_pattern(r.protocol, r.spec), (r.raw, dict(r.readouts)))


def _look_up(kind: str, unit: Any) -> list[Record]:
    """The unit's records, looked up instead of computed."""
    if not _FIRST_UNIT:
        _FIRST_UNIT.extend((time.perf_counter(), time.process_time()))
    out = []
    for item in unit.items:
        raw, readouts = _RECORDS[_pattern(kind, item.to_json())]
        out.append(Record(item.key, "ok", None, raw, readouts, 0.001))
    return out


def _replay_stages(config: SweepConfig, plan: Any, store: RunStore) -> Iterator[Any]:
    for stage in SWEEP.stages(config, plan, store):
        yield dataclasses.replace(stage, run_unit=partial(_look_up, stage.kind))


_REPLAY = dataclasses.replace(SWEEP, stages=_replay_stages)


_SPENT: dict[str, float] = {}


def _timed(name: str, fn: Any) -> Any:
    """``fn`` adding its wall time to ``_SPENT[name]`` and its CPU time to ``_SPENT[name_cpu]``
    (this process's: on a shared machine the wall time mostly measures the other processes)."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _SPENT[name] = _SPENT.get(name, 0.0) + time.perf_counter() - start
            _SPENT[f"{name}_cpu"] = _SPENT.get(f"{name}_cpu", 0.0) + time.process_time() - cpu

    return timed


def replay_run(config: SweepConfig, run: Path) -> dict[str, float]:
    """The design through the driver with look-up units, timed: ``to_first_unit_s``,
    ``units_s`` (the units and their commits), ``plan_and_store_s`` (plan_sweep and every
    add_items call)."""
    _FIRST_UNIT.clear()
    _SPENT.clear()
    protocol = dataclasses.replace(_REPLAY, plan=_timed("plan", SWEEP.plan))
    add_items = RunStore.add_items
    RunStore.add_items = _timed("add", add_items)  # type: ignore[method-assign]
    try:
        start = time.perf_counter()
        summary = driver.run(protocol, config, run, Execution(progress=False))
        end, end_cpu = time.perf_counter(), time.process_time()
    finally:
        RunStore.add_items = add_items  # type: ignore[method-assign]
    assert summary.failed == 0, summary.describe()
    return {
        "to_first_unit_s": _FIRST_UNIT[0] - start,
        "units_s": end - _FIRST_UNIT[0],
        "units_cpu_s": end_cpu - _FIRST_UNIT[1],
        "plan_and_store_s": _SPENT["plan"] + _SPENT["add"],
        "plan_and_store_cpu_s": _SPENT["plan_cpu"] + _SPENT["add_cpu"],
    }


# --------------------------------------------------------------------------------------------
# Child processes (peak memory)

_LOAD_CHILD = """
import resource, sys
import pandas, pyarrow
from clearsight.store import load_run
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
frame = load_run(sys.argv[1])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(len(frame), before, after)
"""


def _child(args: Sequence[str]) -> tuple[str, float]:
    """Run ``python args`` with this checkout's path; (stdout, its peak RSS in MB)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = (
        "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True,"
        " text=True); sys.stderr.write(p.stderr[-2000:]); print(p.stdout);"
        " print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    *body, peak = out.stdout.strip().splitlines()
    return "\n".join(body), int(peak) / 1024


def _plan_only(root: Path, n: int, figures: dict[str, float]) -> dict[str, float]:
    """``plan_and_store[_cpu]_us_per_item_<n>`` alone: ``SWEEP.plan`` and ``add_items`` of
    every stage's items into a fresh store, as the driver calls them, at 10 and ``n`` scenes,
    after an untimed plan of 2 (the full benchmark's real fraction comes first in the same
    way: the imports and the prompt templates are loaded once per process, not per item)."""
    with collector_paused():
        SWEEP.plan(design(root, 2))
    for size in dict.fromkeys((min(10, n), n)):
        config = design(root, size)
        with tempfile.TemporaryDirectory(prefix="paper_scale_") as tmp:
            start, cpu = time.perf_counter(), time.process_time()
            with collector_paused():  # as the driver plans
                plan = SWEEP.plan(config)
            with RunStore.open(Path(tmp)) as store:
                for stage in SWEEP.stages(config, plan, store):
                    store.add_items(stage.items)
                items = store.counts()["items"]
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        figures[f"plan_and_store_us_per_item_{items}"] = wall / items * 1e6
        figures[f"plan_and_store_cpu_us_per_item_{items}"] = cpu / items * 1e6
    return dict(figures)


class _Figures(dict[str, float]):
    """The figures, each printed as soon as it is measured (a long run says what it has)."""

    def __setitem__(self, name: str, value: float) -> None:
        super().__setitem__(name, value)
        report(name, value, 0 if name == "items" else 3)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """Run the benchmark, print its figures, return them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", type=int, default=1000)
    parser.add_argument("--run-scenes", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="5 scenes, 2 of them run")
    parser.add_argument(
        "--plan-only", action="store_true", help="only plan and store, at 10 scenes and in full"
    )
    args = parser.parse_args(argv)
    n, n_run = (5, 2) if args.quick else (args.scenes, args.run_scenes)
    cache = Path(os.environ.get("CLEARSIGHT_CACHE", Path.home() / ".cache" / "clearsight"))
    root = cache / "paper_scale"
    root.mkdir(parents=True, exist_ok=True)
    figures = _Figures()
    if args.plan_only:
        return _plan_only(root, n, figures)
    with tempfile.TemporaryDirectory(prefix="paper_scale_") as tmp:
        work = Path(tmp)
        # 1. the real fraction
        start = time.perf_counter()
        fraction = run_sweep(design(root, n_run), work / "fraction", progress=False)
        figures["fraction_items_per_s"] = fraction.ok / (time.perf_counter() - start)
        _learn(work / "fraction")
        # 2. plan and store at 10 scenes, then at full size
        for size in dict.fromkeys((min(10, n), n)):
            run = work / f"scenes_{size}"
            config = design(root, size)
            times = replay_run(config, run)
            with RunStore.open(run, read_only=True) as store:
                counts = store.counts()
            for clock in ("", "_cpu"):
                per_item = times[f"plan_and_store{clock}_s"] / counts["items"] * 1e6
                figures[f"plan_and_store{clock}_us_per_item_{counts['items']}"] = per_item
        figures["items"] = counts["items"]
        figures["to_first_unit_s"] = times["to_first_unit_s"]
        figures["driver_records_per_s"] = counts["ok"] / times["units_s"]
        figures["driver_records_per_cpu_s"] = counts["ok"] / times["units_cpu_s"]
        db = run / DB_NAME
        size = sum(
            Path(f"{db}{s}").stat().st_size for s in ("", "-wal") if Path(f"{db}{s}").exists()
        )
        figures["store_bytes_per_item"] = size / counts["items"]
        # 3. resume
        start, cpu = time.perf_counter(), time.process_time()
        summary = run_sweep(config, run, progress=False)
        figures["resume_s_finished_run"] = time.perf_counter() - start
        figures["resume_cpu_s_finished_run"] = time.process_time() - cpu
        assert summary.units == 0
        # 4. the report, 5. load_run, each in a child process
        cli = ["-c", "from clearsight.cli import main; main()", "report", str(run)]
        _, figures["report_peak_rss_mb"] = _child(cli)
        figures["report_html_kb"] = (run / "report.html").stat().st_size / 1024
        text, _ = _child(["-c", _LOAD_CHILD, str(run)])
        rows, before, after = (int(x) for x in text.split())
        figures["load_run_bytes_per_row"] = (after - before) * 1024 / rows
    return dict(figures)


if __name__ == "__main__":
    main()
