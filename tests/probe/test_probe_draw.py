"""The seeded draws (issue 46 item 11): PER instances of each dataset for one sensor, ranked by
a hash of the seed, the sensor, the dataset and the id — the same draw whatever the file's
order, a smaller draw the first part of a larger one, and ``clearsight probe draw`` writing it
reproducibly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.probe.instances import Instance
from clearsight.probe.sources.draw import draw_per_dataset, draw_rank
from clearsight.validate import InputError


def _pool(per_dataset: int) -> list[Instance]:
    return [
        Instance(f"{d}/{i}", "bundled:skimage-coffee", "Which?", ("x", "y"), "A", d, "c")
        for d in ("cvqa", "seedbench")
        for i in range(per_dataset)
    ]


@settings(max_examples=25, deadline=None)
@given(st.permutations(_pool(30)), st.integers(1, 40), st.integers(0, 3))
def test_a_draw_ignores_order_and_nests(pool: list[Instance], per: int, seed: int) -> None:
    drawn = draw_per_dataset(pool, per, "s", seed)
    assert (
        drawn.instances
        == draw_per_dataset(sorted(pool, key=lambda i: i.id), per, "s", seed).instances
    )
    assert drawn.counts() == {"cvqa": (min(per, 30), 30), "seedbench": (min(per, 30), 30)}
    smaller = draw_per_dataset(pool, max(1, per // 2), "s", seed).instances
    assert set(smaller) <= set(drawn.instances)
    # within a dataset, in rank order: the lowest ranks of all
    cvqa = [i for i in drawn.instances if i.dataset == "cvqa"]
    ranks = sorted(draw_rank(i, "s", seed) for i in pool if i.dataset == "cvqa")
    assert [draw_rank(i, "s", seed) for i in cvqa] == ranks[: len(cvqa)]


def test_the_sensor_and_the_seed_make_other_draws() -> None:
    pool = _pool(200)
    first = set(draw_per_dataset(pool, 100, "InternVL3.5-8B", 0).instances)
    assert first != set(draw_per_dataset(pool, 100, "Qwen2.5-VL-7B", 0).instances)
    assert first != set(draw_per_dataset(pool, 100, "InternVL3.5-8B", 1).instances)
    with pytest.raises(InputError, match="at least one"):
        draw_per_dataset(pool, 0, "s", 0)
    with pytest.raises(InputError, match="appears twice"):
        draw_per_dataset([*pool, pool[0]], 1, "s", 0)


def test_the_command_writes_the_same_draw_and_the_human_sample_inside_it(tmp_path: Path) -> None:
    source = tmp_path / "kept.jsonl"
    source.write_text("".join(json.dumps(i.to_json()) + "\n" for i in _pool(120)))
    runner = CliRunner()

    def draw(per: int, out: str) -> list[str]:
        args = ["probe", "draw", "--instances", str(source), "--sensor", "s", "--per", str(per)]
        result = runner.invoke(app, [*args, "--out", str(tmp_path / out)])
        assert result.exit_code == 0, result.output
        assert f"cvqa: {per} of 120" in result.output
        return [json.loads(line)["id"] for line in (tmp_path / out).read_text().splitlines()]

    hundred = draw(100, "a.jsonl")
    assert hundred == draw(100, "b.jsonl")
    assert len(hundred) == 200
    fifty = draw(50, "human.jsonl")
    assert set(fifty) <= set(hundred)
    assert fifty == [i for i in hundred if i in set(fifty)]  # the first 50 of each dataset
