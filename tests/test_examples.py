"""The ready configurations in ``examples/``: each loads through its protocol's configuration
model (the loader ``--config`` uses), and plans offline with its paths pointed at small
fixtures (a synthetic COCO set with a stated depth, a TGS-Bench file written here, an instance
file written here); ``clearsight examples`` and ``clearsight docs`` find and copy them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.config import load_config
from clearsight.models.presets import find_preset
from clearsight.models.resolve import applied_presets
from clearsight.shipped import shipped_dir, shipped_files

EXAMPLES = Path(__file__).parents[1] / "examples"
SWEEP_MODELS = {
    "Qwen/Qwen3-VL-2B-Instruct",
    "Qwen/Qwen3-VL-4B-Instruct",
    "OpenGVLab/InternVL3_5-2B-HF",
    "google/gemma-3n-E2B-it",
    "HuggingFaceTB/SmolVLM2-2.2B-Instruct",
}


def test_every_example_is_found_where_clearsight_looks() -> None:
    assert shipped_dir("examples") == EXAMPLES
    names = {p.stem for p in shipped_files("examples")}
    assert names == {
        "sweep-coco-hf",
        "sweep-coco-vllm",
        "grounding-tgs-bench",
        "probe-openai-sensor",
    }


@pytest.mark.parametrize("backend", ["hf", "vllm"])
def test_the_sweep_examples_plan_the_published_design_on_a_coco_fixture(
    tmp_path: Path, backend: str
) -> None:
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.plan import plan_sweep
    from clearsight.sweep.protocol import SWEEP
    from fixtures.coco import synthetic_coco

    path = EXAMPLES / f"sweep-coco-{backend}.yaml"
    as_written = load_config(path, SweepConfig)
    assert as_written.scenes == "coco"
    assert as_written.coco_n == 1000
    assert as_written.coco_depth_model == "depth-anything/Depth-Anything-V2-Metric-Outdoor-Small-hf"
    assert {m.partition(":")[2] for m in as_written.models} == SWEEP_MODELS
    assert all(m.startswith(f"{backend}:") for m in as_written.models)
    defaults = SweepConfig()
    for field in ("arms", "levels_m", "controls", "tasks", "wordings", "imagenet_c_severities"):
        assert getattr(as_written, field) == getattr(defaults, field), field
    assert set(as_written.wording_scenes.values()) == {300}

    ann, images = synthetic_coco(tmp_path / "coco", 4)
    flags = {"coco_annotations": ann, "coco_images": images, "coco_depth_model": "assumed:40"}
    cfg = load_config(path, SweepConfig, flags)
    plan = plan_sweep(cfg)
    assert len(plan.units) == 5 * 4  # models x scenes
    # per target: clean + 2 arms x 8 levels + blank + shuffled + 5 severities = 24 conditions;
    # identify in 5 wordings + verify (true and distractor) in 5 = 15 questions
    assert len(plan.questions) == 5 * 4 * 24 * 15
    needs = SWEEP.models(cfg)
    assert all(n.needs.candidate_probs and n.needs.generate for n in needs)
    presets = applied_presets((n.name, n.options) for n in needs)
    assert set(presets) == set(cfg.models)  # every model runs with its preset
    for unit in plan.units:
        options = dict(unit.model_options)
        preset = find_preset(unit.model.partition(":")[2])
        assert preset is not None
        assert options["preset"] == preset.name
        assert options["dtype"] == "bfloat16"
        if backend == "vllm":  # the file's share of the GPU wins over the preset's 0.9
            assert options["gpu_memory_utilization"] < 0.25
    if backend == "vllm":
        shares = [cfg.options_of(m)["gpu_memory_utilization"] for m in cfg.models]
        assert sum(shares) <= 0.9


def test_the_sweep_example_stops_before_the_run_without_its_depth_model(tmp_path: Path) -> None:
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.plan import plan_sweep
    from clearsight.validate import InputError
    from fixtures.coco import synthetic_coco

    ann, images = synthetic_coco(tmp_path / "coco", 2)
    flags: dict[str, Any] = {"coco_annotations": ann, "coco_images": images}
    cfg = load_config(EXAMPLES / "sweep-coco-hf.yaml", SweepConfig, flags)
    pytest.importorskip("huggingface_hub")
    empty = tmp_path / "hf-cache"
    with pytest.MonkeyPatch.context() as mp:
        import huggingface_hub.constants as constants

        mp.setattr(constants, "HF_HUB_CACHE", str(empty))
        with pytest.raises(InputError, match=r"`clearsight fetch --depth`"):
            plan_sweep(cfg)


def _bench(tmp_path: Path) -> Path:
    from clearsight.grounding.bench.file import BenchItem, BenchPair, TgsBench, write_bench
    from clearsight.grounding.problems.problem import Problem
    from clearsight.grounding.trajectories.trajectory import Trajectory

    items = []
    for i in range(3):
        good = Trajectory(f"I see {i + 2} apples.", f"{i + 2} + 1 = {i + 3}.", str(i + 3))
        bad = Trajectory(good.vision, f"{i + 2} + 1 = {i + 4}.", good.answer)
        problem = Problem(
            f"p{i}", "ext", f"How many apples after adding one to {i + 2}?", str(i + 3), "number"
        )
        pair = BenchPair(bad, "rule", "arith", None, 0.9)
        items.append(BenchItem(problem, good, {"reasoning": pair}))
    path, _ = write_bench(TgsBench(tuple(items), {"generator": "fixture"}), tmp_path / "b.jsonl")
    return path


def test_the_grounding_example_plans_a_bench_file(tmp_path: Path) -> None:
    from clearsight.grounding.config import GroundingConfig
    from clearsight.grounding.plan import load_problems, plan_trajectories
    from clearsight.grounding.protocol import GROUNDING

    cfg = load_config(EXAMPLES / "grounding-tgs-bench.yaml", GroundingConfig)
    assert (cfg.model, cfg.generator, cfg.n_problems) == ("hf:Qwen/Qwen3-VL-4B-Instruct", None, 0)
    cfg = load_config(
        EXAMPLES / "grounding-tgs-bench.yaml", GroundingConfig, {"bench": str(_bench(tmp_path))}
    )
    problems = load_problems(cfg)
    assert [p.id for p in problems] == ["p0", "p1", "p2"]
    trajectories = plan_trajectories(cfg, problems)
    assert len(trajectories) == 3
    assert trajectories[0].model_options["preset"] == "qwen3-vl-4b"
    [need, *others] = GROUNDING.models(cfg)
    assert others == []  # no generator, no judge
    assert need.needs.attention_mask
    assert need.options["attn_implementation"] == "sdpa"  # a mask the model honours


def test_the_probe_example_plans_an_instance_file_with_an_openai_sensor(tmp_path: Path) -> None:
    from clearsight.probe.config import ProbeConfig
    from clearsight.probe.instances import Instance
    from clearsight.probe.plan import plan_probe
    from clearsight.probe.protocol import PROBE

    instances = tmp_path / "instances.jsonl"
    rows = [
        Instance(f"q{i}", "bundled:skimage-coffee", f"Q{i}?", ("a", "b", "c"), "B", "mine", "c")
        for i in range(2)
    ]
    instances.write_text("".join(json.dumps(r.to_json()) + "\n" for r in rows))
    path = EXAMPLES / "probe-openai-sensor.yaml"
    cfg = load_config(path, ProbeConfig, {"instances": str(instances)})
    assert cfg.sensor.startswith("openai:http://127.0.0.1:8000/v1#")
    specs = plan_probe(cfg)
    # per instance: direct once a run, react and bp per reasoner and signal a run
    assert len(specs) == 2 * cfg.runs * (1 + 2 * len(cfg.reasoners) * len(cfg.signals))
    assert {s.sensor for s in specs} == {cfg.sensor}
    needs = PROBE.models(cfg)
    assert [n.purpose for n in needs] == ["the sensor", "a reasoner", "the judge"]
    assert all(n.name.startswith("openai:") for n in needs)


def test_examples_are_listed_printed_and_copied(tmp_path: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["examples"])
    assert listed.exit_code == 0
    assert "sweep-coco-hf" in listed.output
    shown = runner.invoke(app, ["examples", "sweep-coco-vllm"])
    assert shown.output.strip() == (EXAMPLES / "sweep-coco-vllm.yaml").read_text().strip()
    out = tmp_path / "mine"
    copied = runner.invoke(app, ["examples", "--copy", str(out)])
    assert copied.exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in EXAMPLES.iterdir())
    (out / "sweep-coco-hf.yaml").write_text("models: [observer]\n")
    again = runner.invoke(app, ["examples", "--copy", str(out)])
    assert f"kept {out / 'sweep-coco-hf.yaml'} (it exists)" in again.output
    assert (out / "sweep-coco-hf.yaml").read_text() == "models: [observer]\n"
    missing = runner.invoke(app, ["examples", "nope"])
    assert missing.exit_code == 2
    assert "no example 'nope'; there are: grounding-tgs-bench" in missing.output


def test_examples_copy_never_writes_through_a_link_out_of_its_folder(tmp_path: Path) -> None:
    """A dangling symbolic link in the folder, named as an example, pointing outside it: the
    copy refuses it in one line (exit 2) and writes nothing outside the folder."""
    out, outside = tmp_path / "mine", tmp_path / "outside.yaml"
    out.mkdir()
    name = shipped_files("examples")[0].name
    (out / name).symlink_to(outside)
    result = CliRunner().invoke(app, ["examples", "--copy", str(out)])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: refused to write {out / name}: it is a symbolic link to ")
    assert not outside.exists()


# ------------------------------------------------------------------ docs/methods.md and links

REPO = Path(__file__).parents[1]


def test_the_method_page_is_printed_and_listed() -> None:
    runner = CliRunner()
    page = runner.invoke(app, ["docs", "methods"])
    assert page.exit_code == 0
    assert page.output.strip() == (REPO / "docs" / "methods.md").read_text().strip()
    listed = runner.invoke(app, ["docs"])
    assert "methods    The method: definitions clearsight implements" in listed.output
    for name in ("card", "grounding", "guard", "probe", "scale", "serve"):
        assert f"\n{name} " in f"\n{listed.output}"


def test_every_module_the_method_page_cites_exists() -> None:
    import re

    text = (REPO / "docs" / "methods.md").read_text()
    cited = set(re.findall(r"`([a-z_]+/[a-z_/]+\.(?:py|yaml|txt))`", text))
    assert len(cited) > 30
    missing = sorted(
        c
        for c in cited
        if not (REPO / "src" / "clearsight" / c).is_file() and not (REPO / c).is_file()
    )  # a module of the package, or a benchmark or script of the repository
    assert missing == []


def test_no_page_or_module_points_outside_the_repository() -> None:
    """README, docs/ and the package name no path outside the repository, and every relative
    Markdown link of README and docs/ resolves to a file in it."""
    import re

    texts = [REPO / "README.md", *(REPO / "docs").glob("*.md")]
    texts += [p for p in (REPO / "src").rglob("*") if p.suffix in {".py", ".md", ".yaml", ".txt"}]
    outside = re.compile(r"\.\./shared|METHODS\.md|DESIGN\.md|NOTES\.md|papers/[a-z-]+\.txt")
    hits = [
        f"{p.relative_to(REPO)}: {m.group(0)}"
        for p in texts
        for m in outside.finditer(p.read_text())
    ]
    assert hits == []
    for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).resolve().is_file(), f"{page.name} links {target}"
            assert REPO in (page.parent / target).resolve().parents
