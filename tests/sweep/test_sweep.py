"""The visibility sweep end to end: planning, running, resuming, failures and bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skimage.data
from PIL import Image

from clearsight.config import load_config
from clearsight.store import ConfigMismatch, RunStore, load_run
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import run_sweep
from clearsight.validate import InputError
from conftest import EXECUTOR_ATOL, EXECUTOR_RTOL

SCENES = ("skimage-chelsea", "skimage-coffee", "mpl-grace-hopper")


def small_config(**kw):
    args = {
        "scene_ids": SCENES,
        "wordings": ("mcq.reason", "verbal.plain"),
        "controls": ("clean", "blank", "shuffled"),
        "arms": ("fog",),
    }
    args.update(kw)
    return SweepConfig(**args)


def readouts_by_key(run: Path):
    frame = load_run(run)
    frame = frame[frame.protocol == "sweep"].set_index("key").sort_index()
    cols = ["answer", "correct", "abstained", "internal_conf", "verbal_conf", "status"]
    return frame[cols]


def test_plan_size_keys_and_shared_questions():
    cfg = small_config()
    plan = plan_sweep(cfg)
    targets = 1 + 2 + 1  # chelsea: cat; coffee: cup, spoon; grace hopper: person
    conditions = 1 + 8 + 2
    per_target_question = 1 + 2  # identify + verify (true, distractor)
    assert len(plan.questions) == targets * conditions * per_target_question * 2
    keys = [i.key for i in plan.questions]
    assert len(set(keys)) == len(keys)
    assert [i.key for i in plan_sweep(cfg).questions] == keys  # deterministic
    # one question per target and task: the same options in every condition and wording
    options = {}
    for item in plan.questions:
        ident = (item.scene.id, item.target, item.task, item.asked)
        q = item.question
        opts = q.options[: q.letters.index("E")] if "E" in q.letters else q.options
        options.setdefault(ident, set()).add(opts[:4])
    assert all(len(v) == 1 for v in options.values())
    # ... one question object per target, task and wording, shared by every condition
    shared = {
        (i.scene.id, i.target, i.task, i.asked, i.wording): i.question for i in plan.questions
    }
    assert all(
        i.question is shared[i.scene.id, i.target, i.task, i.asked, i.wording]
        for i in plan.questions
    )
    shuffled = [i for i in plan.questions if i.condition == "shuffled"]
    assert shuffled
    assert all(i.shown.scene.id != i.scene.id for i in shuffled)
    assert all(i.shown is None for i in plan.questions if i.condition != "shuffled")


def test_model_wordings_restrict_a_model_and_keep_the_others_keys():
    both = small_config(models=("observer", "scripted"))
    restricted = small_config(
        models=("observer", "scripted"), model_wordings={"scripted": ("mcq.reason",)}
    )
    full = {i.key: i for i in plan_sweep(both).questions}
    part = {i.key: i for i in plan_sweep(restricted).questions}
    scripted = [i for i in part.values() if i.model == "scripted"]
    assert scripted
    assert {i.wording for i in scripted} == {"mcq.reason"}
    observer = {k for k, i in part.items() if i.model == "observer"}
    assert observer == {k for k, i in full.items() if i.model == "observer"}
    # the restricted model's items are exactly the full plan's items of that wording
    assert {k for k, i in part.items() if i.model == "scripted"} == {
        k for k, i in full.items() if i.model == "scripted" and i.wording == "mcq.reason"
    }
    with pytest.raises(ValueError, match="not in models"):
        small_config(model_wordings={"scripted": ("mcq.reason",)})
    with pytest.raises(ValueError, match="subset of the arms and controls"):
        small_config(model_conditions={"observer": ("water",)})


def test_model_conditions_restrict_what_a_model_is_shown():
    cfg = small_config(
        models=("observer", "scripted"), model_conditions={"scripted": ("clean", "blank")}
    )
    items = plan_sweep(cfg).questions
    assert {i.condition for i in items if i.model == "scripted"} == {"clean", "blank"}
    assert {i.condition for i in items if i.model == "observer"} == {
        "clean",
        "fog",
        "blank",
        "shuffled",
    }
    with pytest.raises(ValueError, match="subset of wordings"):
        small_config(model_wordings={"observer": ("mcq.generic",)})


def test_serial_and_process_pool_give_identical_records(tmp_path):
    cfg = small_config(tasks=("identify",))
    a = run_sweep(cfg, tmp_path / "serial", executor="serial", progress=False)
    b = run_sweep(cfg, tmp_path / "pool", executor="process", workers=2, progress=False)
    assert a.ok == b.ok == len(plan_sweep(cfg).items)
    assert a.failed == b.failed == 0
    left, right = readouts_by_key(tmp_path / "serial"), readouts_by_key(tmp_path / "pool")
    assert left.index.equals(right.index)
    # answers, correctness, abstentions and statuses exactly; the confidences to the tolerance
    # across executors (conftest: a pool worker runs one numba/BLAS thread, the serial run the
    # library defaults, so the observer's float sums may round differently)
    pd.testing.assert_frame_equal(
        left, right, check_exact=False, rtol=EXECUTOR_RTOL, atol=EXECUTOR_ATOL
    )


def test_resume_fresh_and_config_mismatch(tmp_path):
    cfg = small_config(tasks=("identify",), wordings=("mcq.reason",))
    first = run_sweep(cfg, tmp_path / "r", progress=False)
    assert first.ok > 0
    again = run_sweep(cfg, tmp_path / "r", progress=False)
    assert (again.units, again.ok) == (0, 0)
    other = cfg.model_copy(update={"seed": 1})
    with pytest.raises(ConfigMismatch, match="--fresh"):
        run_sweep(other, tmp_path / "r", progress=False)
    redo = run_sweep(other, tmp_path / "r", fresh=True, progress=False)
    assert redo.ok == first.ok


def test_observer_separates_clear_from_murky(tmp_path):
    # targets 2-2.5 m away: at V = 1.95 m their transmission is below the 2 % threshold
    far = ("skimage-astronaut", "skimage-camera", "skimage-stereo-motorcycle")
    cfg = small_config(scene_ids=far, tasks=("identify",), wordings=("mcq.generic",))
    run_sweep(cfg, tmp_path / "r", progress=False)
    frame = load_run(tmp_path / "r")
    clean = frame[frame.condition == "clean"]
    blank = frame[frame.condition == "blank"]
    murky = frame[(frame.condition == "fog") & (frame.level_m < 2)]
    assert clean.correct.mean() == 1.0
    assert clean.internal_conf.min() > 0.99
    assert blank.internal_conf.max() < 0.26
    assert murky.internal_conf.mean() < 0.6
    assert murky.correct.mean() < clean.correct.mean()


KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.protocol import run_sweep
    cfg = SweepConfig.model_validate_json(sys.argv[2])
    run_sweep(cfg, Path(sys.argv[1]), executor="serial", progress=False)
    """
)


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path):
    cfg = small_config(scene_ids=(*SCENES, "skimage-astronaut", "skimage-camera"))
    reference = tmp_path / "reference"
    run_sweep(cfg, reference, progress=False)
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, str(killed), cfg.model_dump_json()],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    db = killed / "run.sqlite"
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            try:
                with RunStore.open(killed, read_only=True) as store:
                    done = store.counts()["ok"]
            except InputError:  # created but its schema not yet written
                done = 0
            if done > 0:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with RunStore.open(killed, read_only=True) as store:
        partial = store.counts()
    assert 0 < partial["ok"] < len(plan_sweep(cfg).items)
    resumed = run_sweep(cfg, killed, progress=False)
    assert resumed.ok == len(plan_sweep(cfg).items) - partial["ok"]
    left, right = readouts_by_key(reference), readouts_by_key(killed)
    assert left.index.is_unique
    assert right.index.is_unique
    assert left.index.equals(right.index)
    # exact: both runs use the serial executor with the same thread settings, and a SIGKILL
    # loses whole units (records are committed per unit), so every unit is rendered and
    # answered by the same code on the same inputs as in the uninterrupted run
    assert left.fillna(-1).equals(right.fillna(-1))


def test_unknown_model_and_empty_scene_set(tmp_path):
    with pytest.raises(ValueError, match="unknown model 'nonsense:x'"):
        small_config(models=("nonsense:x",))
    with pytest.raises(InputError, match="empty"):
        run_sweep(small_config(scene_ids=()), tmp_path / "r", progress=False)
    with pytest.raises(InputError, match="unknown scene ids"):
        run_sweep(small_config(scene_ids=("nope",)), tmp_path / "r", progress=False)


def test_malformed_config_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("arms: [fog\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_config(bad, SweepConfig)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("arms: [smoke]\n")
    with pytest.raises(InputError, match=r"wrong\.yaml"):
        load_config(wrong, SweepConfig)
    good = tmp_path / "good.yaml"
    good.write_text("arms: [water]\nseed: 3\n")
    assert load_config(good, SweepConfig).arms == ("water",)


def _coco_fixture(root: Path) -> tuple[Path, Path]:
    images = root / "images"
    images.mkdir(parents=True)
    Image.fromarray(skimage.data.astronaut()).save(images / "1.jpg")
    Image.fromarray(skimage.data.stereo_motorcycle()[0]).save(images / "2.jpg")
    (images / "3.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated garbage")
    cats = [
        {"id": 3, "name": "car", "supercategory": "vehicle"},
        {"id": 4, "name": "motorcycle", "supercategory": "vehicle"},
    ]
    imgs = [
        {"id": 1, "file_name": "1.jpg", "width": 512, "height": 512, "license": 1},
        {"id": 2, "file_name": "2.jpg", "width": 741, "height": 500, "license": 1},
        {"id": 3, "file_name": "3.jpg", "width": 400, "height": 400, "license": 1},
    ]
    anns = [
        {
            "id": 10,
            "image_id": 1,
            "category_id": 3,
            "bbox": [100, 100, 200, 200],
            "area": 40000,
            "iscrowd": 0,
        },
        {
            "id": 11,
            "image_id": 2,
            "category_id": 4,
            "bbox": [80, 80, 520, 350],
            "area": 182000,
            "iscrowd": 0,
        },
        {
            "id": 12,
            "image_id": 3,
            "category_id": 3,
            "bbox": [50, 50, 200, 200],
            "area": 40000,
            "iscrowd": 0,
        },
    ]
    ann = root / "instances.json"
    ann.write_text(
        json.dumps(
            {
                "images": imgs,
                "annotations": anns,
                "categories": cats,
                "licenses": [{"id": 1, "name": "CC BY 2.0", "url": "x"}],
            }
        )
    )
    return ann, images


def test_corrupt_coco_image_is_a_failed_item_and_the_run_goes_on(tmp_path):
    ann, images = _coco_fixture(tmp_path / "coco")
    cfg = small_config(
        scenes="coco",
        scene_ids=None,
        coco_annotations=ann,
        coco_images=images,
        coco_depth_model="assumed:10",
        tasks=("identify",),
        wordings=("mcq.reason",),
    )
    summary = run_sweep(cfg, tmp_path / "r", progress=False)
    frame = load_run(tmp_path / "r")
    sweep = frame[frame.protocol == "sweep"]
    failed = sweep[sweep.status == "failed"]
    assert summary.stages["sweep"].failed == len(failed) > 0
    assert failed.error.str.contains("3.jpg").all()
    depth = frame[frame.protocol == "sweep.depth"].set_index("scene.id")
    assert summary.stages["sweep.depth"].failed == 1  # the corrupt scene has no depth profile
    assert depth.status.to_dict() == {"coco-1": "ok", "coco-2": "ok", "coco-3": "failed"}
    # every item of the corrupt scene fails, and elsewhere only the shuffled control that
    # would have shown its pixels
    own = sweep["scene.id"] == "coco-3"
    shows_it = (sweep.condition == "shuffled") & (sweep["shown.scene.id"] == "coco-3")
    assert set(failed.index) == set(sweep[own | shows_it].index)
    ok = sweep[sweep.status == "ok"]
    assert set(ok["scene.id"]) == {"coco-1", "coco-2"}
    assert len(ok) > len(failed)
    assert np.isfinite(ok.internal_conf).all()


@pytest.mark.slow
@pytest.mark.parametrize("family", ["tiny_idefics3_path", "tiny_qwen2vl_path", "tiny_llama_path"])
def test_tiny_transformers_models_run_a_real_sweep(family, request, tmp_path):
    path = request.getfixturevalue(family)
    model = f"hf:{path}"
    cfg = small_config(
        scene_ids=("skimage-chelsea",),
        models=(model,),
        tasks=("identify",),
        controls=("clean", "blank"),
        levels_m=(62.5, 1.953125),
    )
    summary = run_sweep(cfg, tmp_path / "r", progress=False)
    assert summary.failed == 0
    assert summary.ok == len(plan_sweep(cfg).items)
    frame = load_run(tmp_path / "r", include_raw=True)
    frame = frame[frame.protocol == "sweep"]
    letters = frame[frame.wording == "mcq.reason"]
    assert ((letters.internal_conf >= 0.25 - 1e-9) & (letters.internal_conf <= 1)).all()
    assert (letters.letter_mass > 0).all()
    assert letters.answer.isin(list("ABCDE")).all()
    verbal = frame[frame.wording == "verbal.plain"]
    assert all(json.loads(r)["texts"] for r in verbal.raw)
    dropped = [json.loads(r)["extra"].get("images_dropped", 0) for r in frame.raw]
    if family == "tiny_llama_path":  # a text-only model is the blind control: no image seen
        assert all(d == 1 for d in dropped)
    else:
        assert not any(dropped)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"executor": "threads"}, "unknown executor 'threads'"), ({"workers": 0}, "workers must")],
)
def test_a_bad_executor_or_worker_count_leaves_no_run_behind(tmp_path, options, message):
    with pytest.raises(InputError, match=message):
        run_sweep(small_config(), tmp_path / "run", progress=False, **options)
    assert not (tmp_path / "run").exists()


def test_wording_scenes_asks_a_wording_on_the_first_scenes_only(tmp_path: Path) -> None:
    full = small_config()
    limited = small_config(wording_scenes={"verbal.plain": 1})
    everything = {i.key: i for i in plan_sweep(full).items if i.kind == "sweep"}
    part = {i.key: i for i in plan_sweep(limited).items if i.kind == "sweep"}
    assert {i.scene.id for i in part.values() if i.wording == "verbal.plain"} == {SCENES[0]}
    assert {i.scene.id for i in part.values() if i.wording == "mcq.reason"} == set(SCENES)
    # the limited plan is exactly the full plan without the later scenes' verbal items
    assert set(part) == {
        k for k, i in everything.items() if i.wording != "verbal.plain" or i.scene.id == SCENES[0]
    }
    with pytest.raises(ValueError, match="not in wordings"):
        small_config(wording_scenes={"verbal.scale": 2})
    with pytest.raises(ValueError, match="greater than 0"):
        small_config(wording_scenes={"verbal.plain": 0})
    run = tmp_path / "run"
    summary = run_sweep(limited, run, progress=False)
    assert summary.ok == len(plan_sweep(limited).items)
    with RunStore.open(run, read_only=True) as store:
        assert store.manifest()["config"]["wording_scenes"] == {"verbal.plain": 1}
    from clearsight.report import build_report

    build_report(run, tmp_path / "report", n_boot=50, thumbnails=False)
    assert (tmp_path / "report" / "report.html").is_file()


TURBID = {
    "turbid_absorption_per_m": (0.45, 0.12, 0.10),
    "turbid_scattering_per_m": (0.35, 0.4, 0.45),
}


def test_the_turbid_arm_needs_its_water_and_leaves_other_keys_alone():
    with pytest.raises(ValueError, match="needs the water's"):
        small_config(arms=("fog", "turbid"))
    with pytest.raises(ValueError, match="need 'turbid' in arms"):
        small_config(**TURBID)
    with pytest.raises(ValueError, match="pure-water arm"):
        small_config(
            arms=("turbid",),
            turbid_absorption_per_m=(0.1, 0.1, 0.1),
            turbid_scattering_per_m=(0.0, 0.0, 0.0),
        )
    plain = small_config()
    assert "turbid_absorption_per_m" not in plain.model_dump(mode="json")
    turbid = small_config(arms=("fog", "turbid"), **TURBID)
    fog_keys = {i.key for i in plan_sweep(plain).questions if i.condition != "turbid"}
    with_turbid = plan_sweep(turbid).questions
    # the water's coefficients are part of every item's physics once the arm is on
    assert fog_keys.isdisjoint(i.key for i in with_turbid)
    assert {i.condition for i in with_turbid} == {"clean", "fog", "turbid", "blank", "shuffled"}


def test_a_turbid_sweep_runs_reports_and_states_its_visibility_channel(tmp_path):
    from clearsight.report import build_report
    from clearsight.sweep.results import load_run_data

    cfg = small_config(
        arms=("water", "turbid"), tasks=("identify",), wordings=("mcq.reason",), **TURBID
    )
    summary = run_sweep(cfg, tmp_path / "r", progress=False)
    assert summary.failed == 0
    data = load_run_data(tmp_path / "r")
    assert data.arms == ["water", "turbid"]
    assert data.manifest["turbid_water"] == {
        "visibility_channel": "G",
        "attenuation_ratio_rgb": [round(0.80 / 0.52, 6), 1.0, round(0.55 / 0.52, 6)],
        "veil_rgb": [
            round(0.8 * (0.35 / 0.80) / (0.45 / 0.55), 6),
            round(0.8 * (0.40 / 0.52) / (0.45 / 0.55), 6),
            0.8,
        ],
    }
    turbid = data.records[data.records.condition == "turbid"]
    assert sorted(turbid.level_m.unique(), reverse=True) == list(cfg.levels_m)
    # the observer loses the target as the turbid water thickens
    by_level = turbid.groupby("level_m")["correct"].mean()
    assert by_level[cfg.levels_m[0]] >= by_level[cfg.levels_m[-1]]
    html = build_report(tmp_path / "r", n_boot=50, thumbnails=False).html.read_text()
    assert "turbid" in html
