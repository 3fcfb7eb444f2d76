"""The error-side judge sees the problem's image when it is a VLM (issue 46 item 8): the
image travels through the backend's image input and moves the judge's probabilities; a
text-only judge reads the text alone, and the report says which kind judged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from test_grounding_model import one_thread  # noqa: F401  (one thread: faster)

from clearsight.grounding.bench.pairs import bad_trajectory, judge_request
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.grounding.problems.families import VISUAL_FAMILIES
from clearsight.grounding.trajectories.trajectory import good_trajectory
from clearsight.grounding.unit import problem_image
from clearsight.models.hf import make_hf

PROBLEM = bundled_problems(1, VISUAL_FAMILIES)[0]
GOOD = good_trajectory(PROBLEM)
BAD = bad_trajectory(GOOD, "vision", GOOD.vision + " The bars are all equal.")


def test_a_vlm_judge_is_shown_the_image(tiny_qwen2vl_path: Path) -> None:
    backend = make_hf(str(tiny_qwen2vl_path), {"batch_size": 2})
    image = problem_image(PROBLEM, backend)
    assert image is not None  # the VLM takes images and the chart problem has one
    seeing = judge_request(PROBLEM, GOOD, BAD, True, image)
    blind = judge_request(PROBLEM, GOOD, BAD, True)
    assert [len(m.images) for m in seeing.messages] == [1]
    assert [len(m.images) for m in blind.messages] == [0]
    assert seeing.messages[0].text == blind.messages[0].text  # the same words, plus the image
    with_image, without = backend.complete([seeing, blind])
    p, q = with_image.candidate_probs or {}, without.candidate_probs or {}
    assert set(p) == set(q) == {"1", "2"}
    assert not np.isclose(p["1"], q["1"], rtol=0, atol=1e-9)  # the pixels reached the model


def test_a_text_only_judge_gets_no_image(tiny_llama_path: Path) -> None:
    backend = make_hf(str(tiny_llama_path), {"batch_size": 2})
    assert problem_image(PROBLEM, backend) is None


def test_the_report_says_what_the_judge_saw() -> None:
    from clearsight.grounding.page.tables import judge_input

    assert judge_input(4, 4) == "image and text"
    assert judge_input(4, 0) == "text only"
    assert judge_input(4, 1) == "image and text in 1 of 4"
