"""Model-native trajectories (issue 36, item 3): each model writes in its family's template, its
trajectory is scored as written, the segmenter marking its spans where they stand; the
canonical template stays a choice that gives the records it always gave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from clearsight.grounding import GroundingConfig, build_grounding_report, run_grounding
from clearsight.grounding.confidence.methods import get_readout, readout_requests
from clearsight.grounding.hesitation import find_hesitations
from clearsight.grounding.plan import plan_elicitations, plan_trajectories
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.grounding.specs import ELICIT, TRAJECTORY, TemplateRef
from clearsight.grounding.trajectories.generation import generate_trajectories
from clearsight.grounding.trajectories.templates import (
    choose_template,
    get_template,
    template_by_id,
    template_statement,
    trajectory_tokens,
)
from clearsight.grounding.trajectories.trajectory import SEGMENTS, Trajectory
from clearsight.grounding.trajectories.written import (
    WrittenTrajectory,
    finish_written,
    force_suffix,
    parse_written,
    trajectory_from_json,
)
from clearsight.grounding.variation import axis_prefix, sampled_alternative
from clearsight.models.base import Response
from clearsight.models.resolve import resolve_options
from clearsight.models.scripted import ScriptedBackend
from clearsight.store import RunStore
from clearsight.validate import InputError

THINK = get_template("think")
VLCAL = get_template("vlcal")
PROBLEM = bundled_problems(1)[0]  # shop/0/0
#: What a Qwen3-VL-like model writes after the ``<think>`` it is started with.
WRITTEN = (
    "The shop has 33 pencils and gets 2 boxes of 5.\n"
    "Wait, let me re-check the boxes.\n"
    "So 2 x 5 = 10, and 33 + 10 - 6 = 37.\n"
    "</think>\n\nAnswer: 37\nConfidence (0-10): 9"
)
AS_WRITTEN = "<think>\n" + WRITTEN[: WRITTEN.index("\nConfidence")]
#: The segmenter's spans in AS_WRITTEN: the observation, the hesitation and derivation, the 37.
VISION = "The shop has 33 pencils and gets 2 boxes of 5.\nWait, let me re-check the boxes."
REASONING = "So 2 x 5 = 10, and 33 + 10 - 6 = 37."


def _spans(text: str, *parts: str) -> list[tuple[int, int]]:
    return [(text.index(p), text.index(p) + len(p)) for p in parts]


# --------------------------------------------------------------------------------------------
# Scored as written
# --------------------------------------------------------------------------------------------


def _scripted_run(tmp_path: Path, choice: str) -> Path:
    """A grounding run of one problem on a scripted model that writes WRITTEN; its masked
    scoring answers only requests whose text and hidden ranges are the written trajectory's
    (confidence 8 visible, 2 fully masked, 5 for the hesitation sides)."""
    body = AS_WRITTEN + "\nConfidence (0-10): "
    vision, reasoning = _spans(body, VISION, REASONING)
    entries = [
        {"match": PROBLEM.question, "texts": [WRITTEN]},
        {"match": body, "hidden": {"share": 0.0, "hide": [], "sequence_probs": {"8": 1.0}}},
        {
            "match": body,
            "hidden": {"share": 1.0, "hide": [vision, reasoning], "sequence_probs": {"2": 1.0}},
        },
        {"match": "</think>\n\nAnswer: 37\nConf", "hidden": {"sequence_probs": {"5": 1.0}}},
    ]
    script = tmp_path / "model.jsonl"
    script.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    config = GroundingConfig(
        model=f"scripted:{script}",
        generator=None,
        n_problems=1,
        trajectory_template=choice,
        mask_ratios=(0.0, 1.0),
        pairs=False,
        variation=False,
        n_boot=100,
    )
    run = tmp_path / "run"
    run_grounding(config, run, progress=False)
    return run


def test_a_native_trajectory_is_scored_as_written(tmp_path: Path) -> None:
    """The think-block trajectory is stored as the model wrote it, its spans found by the
    segmenter in that text; the visible and the fully masked read-outs score that text (the
    scripted scores answer nothing else) with exactly those spans hidden; the hesitation
    event is cut out of the text, the answer kept as written."""
    run = _scripted_run(tmp_path, "think")
    with RunStore.open(run, read_only=True) as store:
        (own,) = store.iter_records(kind=TRAJECTORY)
        read = {r.spec["variant"]: r for r in store.iter_records(kind=ELICIT)}
        manifest = store.manifest()
    assert own.raw == {"text": AS_WRITTEN}
    traj = trajectory_from_json(own.readouts["trajectory"])
    assert isinstance(traj, WrittenTrajectory)
    assert traj.text == AS_WRITTEN
    answer = (len(AS_WRITTEN) - 2, len(AS_WRITTEN))  # the 37 after "Answer: "
    assert list(traj.spans) == [*_spans(AS_WRITTEN, VISION, REASONING), answer]
    assert sorted(read) == ["hesitation/post", "hesitation/pre", "self/r0.00", "self/r1.00"]
    assert all(r.status == "ok" for r in read.values()), [r.error for r in read.values()]
    assert read["self/r0.00"].readouts["expected"] == pytest.approx(0.8)
    assert read["self/r1.00"].readouts["expected"] == pytest.approx(0.2)
    pre = trajectory_from_json(read["hesitation/pre"].spec["trajectory"])
    assert isinstance(pre, WrittenTrajectory)
    assert pre.text == (
        "<think>\nThe shop has 33 pencils and gets 2 boxes of 5.\n</think>\n\nAnswer: 37"
    )
    assert manifest["trajectory"] == {
        "choice": "think",
        "template": "think",
        "reason": "chosen",
        "max_new_tokens": 1024,
    }
    assert manifest["template"] == {"id": THINK.id, "hash": THINK.hash}
    build_grounding_report(run, n_boot=100)
    stated = "think (choice think; chosen); own trajectories up to 1024 new tokens"
    assert f"Trajectory template: {stated}" in (run / "summary.md").read_text()
    assert template_statement({}) == "canonical (the only template when this run was made)"


def test_the_elicitation_text_is_the_trajectory_as_written() -> None:
    """Generation keeps the text; every read-out puts its slot after the written answer and
    hides the segmenter's spans of that text (no re-rendering)."""
    backend = ScriptedBackend(matched=[(PROBLEM.question, Response(texts=(WRITTEN,)))])
    (got,) = generate_trajectories(backend, [PROBLEM], [None], THINK, max_new_tokens=50)
    assert not isinstance(got, Exception)
    assert isinstance(got.trajectory, WrittenTrajectory)
    traj = got.trajectory
    assert (got.text, traj.vision, traj.reasoning, traj.answer) == (
        AS_WRITTEN,
        VISION,
        REASONING,
        "37",
    )
    for name, tail in (("verbalize", "\nConfidence (0-10): "), ("rlcr", "</answer>\n<confidence>")):
        (req,) = readout_requests(get_readout(name), PROBLEM, traj, 1.0, 0, None, THINK)
        text = req.messages[-1].text
        assert text == AS_WRITTEN + tail
        assert list(req.hide) == _spans(text, VISION, REASONING)
        assert THINK.user.replace("{question}", PROBLEM.question) in req.messages[0].text


def test_an_unfinished_think_block_is_closed_and_its_answer_forced() -> None:
    """A generation that runs out inside its think block is cut after its last sentence, the
    block closed and the answer tag given; the model's answer then ends the text."""
    cut = "I see 3 apples. So 3 + 4 = 7. Then I shoul"
    backend = ScriptedBackend(ordered=[Response(texts=(cut,)), Response(texts=(" 7\nMore",))])
    (got,) = generate_trajectories(backend, [PROBLEM], [None], THINK, max_new_tokens=5)
    assert not isinstance(got, Exception)
    assert got.answer_forced
    assert got.text == "<think>\nI see 3 apples. So 3 + 4 = 7.\n</think>\n\nAnswer: 7"
    assert got.trajectory is not None
    assert got.trajectory.answer == "7"


def test_sampled_alternatives_of_a_written_trajectory_stay_as_written() -> None:
    """Content variation samples from the written text cut at the axis's span and splices
    the sample's segment into it; everything else stays as written."""
    traj = parse_written(AS_WRITTEN, THINK)
    prefix = axis_prefix(traj, "reasoning", THINK)
    assert prefix == AS_WRITTEN[: AS_WRITTEN.index(REASONING)]
    sample = "Boxes hold 10, so 33 + 10 - 6 = 37.\n</think>\n\nAnswer: 37\nConfidence (0-10): 3"
    alt = sampled_alternative(PROBLEM, traj, "reasoning", sample, THINK)
    assert isinstance(alt, WrittenTrajectory)
    assert alt.text == AS_WRITTEN.replace(REASONING, "Boxes hold 10, so 33 + 10 - 6 = 37.")
    assert (alt.vision, alt.answer) == (VISION, "37")
    answer = sampled_alternative(PROBLEM, traj, "answer", " 38\nConfidence (0-10): 2", THINK)
    assert isinstance(answer, WrittenTrajectory)
    assert answer.text == AS_WRITTEN[:-2] + "38"
    with pytest.raises(InputError, match="changes the answer"):
        sampled_alternative(PROBLEM, traj, "vision", "I see 9.\n</think>\nAnswer: 9", THINK)


def test_an_unfinished_vl_calibration_block_is_closed_and_its_answer_forced() -> None:
    """The block left open is closed, then the answer tag given; a block ends at the next tag
    of any block, a closing one included."""
    assert force_suffix("<vision>\nI see 3.", VLCAL) == "\n</vision>\n<answer>"
    assert force_suffix("<vision>a</vision><reasoning>b", VLCAL) == "\n</reasoning>\n<answer>"
    assert force_suffix("<vision>a</vision><reasoning>b</reasoning>", VLCAL) == "\n<answer>"
    cut = "I see 3 apples.\n\nSo 3 + 4 = 7. Then I shoul"
    backend = ScriptedBackend(ordered=[Response(texts=(cut,)), Response(texts=("7</answer>",))])
    (got,) = generate_trajectories(backend, [PROBLEM], [None], VLCAL, max_new_tokens=5)
    assert not isinstance(got, Exception)
    assert got.text == "<vision>\nI see 3 apples.\n\nSo 3 + 4 = 7.\n</vision>\n<answer>7</answer>"
    assert got.trajectory is not None
    assert (got.trajectory.vision, got.trajectory.reasoning, got.trajectory.answer) == (
        "I see 3 apples.\n\nSo 3 + 4 = 7.",
        "",
        "7",
    )
    loose = parse_written("<vision>I see 3.</reasoning>\n<answer>3</answer>", VLCAL)
    assert (loose.vision, loose.reasoning, loose.answer) == ("I see 3.", "", "3")


# --------------------------------------------------------------------------------------------
# Which template, how long
# --------------------------------------------------------------------------------------------

#: The conformance families (tests/models/test_conformance.py) by their checkpoints'
#: model_type, and the template each writes in under ``native``.
FAMILY_TEMPLATES = {
    "llama": "canonical",
    "idefics3": "canonical",
    "smolvlm": "canonical",
    "qwen2_vl": "canonical",
    "qwen2_5_vl": "canonical",
    "qwen3_vl": "think",
    "internvl": "think",
    "gemma3": "canonical",
    "gemma4": "canonical",
    "gemma3n": "canonical",
    "llava_onevision": "canonical",
    "llava": "canonical",
    "mllama": "canonical",
    "paligemma": "canonical",
    "qwen3_5": "think",
}


@pytest.mark.parametrize(("model_type", "expected"), sorted(FAMILY_TEMPLATES.items()))
def test_a_local_checkpoint_gets_its_familys_template(
    tmp_path: Path, model_type: str, expected: str
) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}))
    model = f"hf:{tmp_path}"
    chosen = choose_template("native", model, resolve_options(model, {}))
    assert chosen.name == expected
    assert chosen.reason.startswith("native" if expected != "canonical" else "canonical")
    assert choose_template("canonical", model, {}).name == "canonical"


def test_presets_pick_their_familys_template_and_length() -> None:
    cases = {
        ("hf:Qwen/Qwen3-VL-8B-Instruct", None): ("think", 2048),
        ("vllm:OpenGVLab/InternVL3_5-8B-HF", None): ("think", 2048),
        ("hf:/data/vlcal", "vl-calibration-4b"): ("vlcal", 2048),
        ("hf:HuggingFaceTB/SmolVLM2-2.2B-Instruct", None): ("canonical", 1024),
        ("vllm:Qwen/Qwen2.5-VL-7B-Instruct", None): ("canonical", 2048),
        ("hf:smollm2-135m", None): ("canonical", 1024),
        ("scripted:x.jsonl", None): ("canonical", 1024),
    }
    for (model, preset), (name, tokens) in cases.items():
        opts = resolve_options(model, {} if preset is None else {"preset": preset})
        assert choose_template("native", model, opts).name == name, model
        assert trajectory_tokens(model, opts, None) == tokens, model
        assert trajectory_tokens(model, opts, 64) == 64
    assert choose_template("vlcal", "hf:smollm2-135m", {}).template == VLCAL
    smollm = choose_template("native", "hf:smollm2-135m", {})
    assert (
        smollm.reason
        == "canonical: no native template for hf:smollm2-135m (no preset, no local config.json)"
    )
    qwen25 = resolve_options("vllm:Qwen/Qwen2.5-VL-7B-Instruct", {})
    assert choose_template("native", "vllm:Qwen/Qwen2.5-VL-7B-Instruct", qwen25).reason == (
        "canonical: no native template for family Qwen2.5-VL"
    )


def test_the_choice_is_checked_and_resolved_by_the_config() -> None:
    with pytest.raises(ValidationError, match="unknown trajectory template 'cot'"):
        GroundingConfig(trajectory_template="cot")
    cfg = GroundingConfig(model="hf:Qwen/Qwen3-VL-4B-Instruct", generator=None)
    assert (cfg.template().name, cfg.trajectory_tokens()) == ("think", 2048)
    assert GroundingConfig().trajectory_template == "native"
    with pytest.raises(InputError, match="no bundled trajectory template has the id"):
        template_by_id("grounding.nope")


def test_the_canonical_choice_plans_the_items_it_always_planned() -> None:
    """Under ``canonical`` a Qwen3-VL run plans what every run planned before templates were
    a choice: the canonical template's id and hash (the hash main keyed its items with) and
    rendered trajectories (a model without a native family gets the same under ``native``)."""
    canonical = TemplateRef("grounding.tagged.v2", "c00e7be06773d25e")
    for model, choice in (("hf:Qwen/Qwen3-VL-4B-Instruct", "canonical"), ("hf:m", "native")):
        cfg = GroundingConfig(model=model, generator=None, n_problems=0, trajectory_template=choice)
        (spec,) = plan_trajectories(cfg, [PROBLEM])
        assert spec.template == canonical
        own = {PROBLEM.id: {"trajectory": Trajectory("I see.", "So 1 = 1.", "1").to_json()}}
        assert {s.template for s in plan_elicitations(cfg, [PROBLEM], own, {})} == {canonical}


# --------------------------------------------------------------------------------------------
# The segmenter on model output (property tests)
# --------------------------------------------------------------------------------------------

WORD = st.sampled_from(["apples", "the", "bar", "is", "3", "red", "five", "left", "I", "see"])
CUE = st.sampled_from(["so", "therefore", "=", "because", "then"])
MARK = st.sampled_from(["wait", "hmm", "actually", "let me re-check"])


@st.composite
def sentence(draw: st.DrawFn, cue: bool = False) -> str:
    words = draw(st.lists(WORD, min_size=1, max_size=6))
    if cue:
        words.insert(draw(st.integers(0, len(words))), draw(CUE))
    if draw(st.booleans()):
        words.insert(0, draw(MARK) + ",")
    return " ".join(words).capitalize() + "."


@st.composite
def think_text(draw: st.DrawFn) -> tuple[str, list[str], list[str], str]:
    seen = draw(st.lists(sentence(), max_size=3))
    derived = draw(st.lists(sentence(cue=True), max_size=3))
    answer = draw(st.sampled_from(["37", "B", "yes", "2/3", "12 cm"]))
    sep = draw(st.sampled_from([" ", "\n", "  \n"]))
    after = draw(st.sampled_from(["", "\nConfidence (0-10): 7", "\nConfidence: 9\nQ: next"]))
    text = "<think>\n" + sep.join(seen + derived) + "\n</think>\n\nAnswer: " + answer + after
    return text, seen, derived, answer


@settings(max_examples=150, deadline=None)
@given(think_text())
def test_a_think_block_is_segmented_where_it_stands(
    case: tuple[str, list[str], list[str], str],
) -> None:
    text, seen, derived, answer = case
    done = finish_written(text, THINK)
    traj = parse_written(done, THINK)
    assert done.endswith("Answer: " + answer)
    assert text.startswith(done)
    assert traj.answer == answer
    assert traj.render(THINK)[0] == done + "\nConfidence (0-10): "  # as written, then the slot
    (vs, ve), (rs, re_), _ = traj.spans
    assert ve <= rs
    block = " ".join(seen + derived)
    in_spans = " ".join(traj.text[s:e] for s, e in ((vs, ve), (rs, re_)) if e > s)
    assert " ".join(in_spans.split()) == " ".join(block.split())  # every sentence in a span
    if derived:  # a sentence with a reasoning cue starts the reasoning at the latest
        assert rs <= done.index(derived[0])
    for k in range(len(find_hesitations(traj))):
        event = find_hesitations(traj)[k]
        for side in (event.pre, event.post):
            assert isinstance(side, WrittenTrajectory)
            assert side.text.endswith("\n</think>\n\nAnswer: " + answer)
            assert side.answer == answer
            assert done.startswith(side.text[: side.spans[1][1]])


@st.composite
def blocks_text(draw: st.DrawFn) -> tuple[str, str, str, str]:
    text = st.text(st.characters(blacklist_characters="<>"), max_size=30)
    v, r = draw(text), draw(text)
    a = draw(text.filter(lambda s: s.strip() != ""))
    ws = draw(st.sampled_from(["", "\n", " \n "]))
    doc = f"<vision>{ws}{v}{ws}</vision>{ws}<reasoning>{r}</reasoning>{ws}<answer>{a}</answer>"
    return doc + draw(st.sampled_from(["", "\nConfidence (0-10): 4"])), v, r, a


@settings(max_examples=150, deadline=None)
@given(blocks_text())
def test_vl_calibration_blocks_are_extracted_directly(case: tuple[str, str, str, str]) -> None:
    text, v, r, a = case
    done = finish_written(text, VLCAL)
    traj = parse_written(done, VLCAL)
    assert (traj.vision, traj.reasoning, traj.answer) == (v.strip(), r.strip(), a.strip())
    assert done.endswith("</answer>")
    assert text.startswith(done)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=6),
            st.sampled_from(
                [
                    "<think>",
                    "</think>",
                    "<vision>",
                    "</vision>",
                    "<reasoning>",
                    "<answer>",
                    "</answer>",
                    "Answer:",
                    ". ",
                    "\n",
                    "So the answer is 4.",
                    "Confidence: ",
                ]
            ),
        ),
        max_size=14,
    ).map("".join),
    st.sampled_from(["think", "vlcal"]),
)
def test_any_model_output_parses_or_is_refused_with_a_reason(text: str, name: str) -> None:
    """Whatever a model writes, the native segmenter returns ordered spans inside the text with
    a non-empty answer, or an InputError; finishing and forcing never fail."""
    t = get_template(name)
    done = finish_written(text, t)
    assert text.startswith(done)
    assert force_suffix(done, t)
    try:
        traj = parse_written(done, t)
    except InputError:
        return
    bounds = [b for span in traj.spans for b in span]
    assert bounds == sorted(bounds)
    assert bounds[0] >= 0
    assert bounds[-1] <= len(done)
    assert traj.answer.strip()
    assert traj.text == done
    for axis in SEGMENTS:
        swapped = traj.with_segment(axis, "NEW TEXT")
        assert isinstance(swapped, WrittenTrajectory)
        assert getattr(swapped, axis) == "NEW TEXT"
        for other in SEGMENTS:
            if other != axis:
                assert getattr(swapped, other) == getattr(traj, other)
    assert trajectory_from_json(traj.to_json()) == traj
