"""Issue 48, item 3: text handling that cannot hang or shift. Spans are found in the text as
stored (a capital dotted I, whose lower-case form is longer, shifts nothing); segmentation is
one pass over the text, whatever it holds, and drops none of it; the lone surrogates a reply's
check replaced are recorded in the trajectory's raw output, as every stored reply records them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clearsight.grounding import GroundingConfig, run_grounding
from clearsight.grounding.bench.pairs import Edit, inject_errors
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.grounding.problems.problem import is_correct
from clearsight.grounding.trajectories.generation import generate_trajectories, parse_generated
from clearsight.grounding.trajectories.parsing import parse_trajectory, sentence_spans, sentences
from clearsight.grounding.trajectories.templates import get_template
from clearsight.grounding.trajectories.trajectory import default_template
from clearsight.grounding.trajectories.written import parse_written
from clearsight.models.base import Response
from clearsight.models.scripted import ScriptedBackend
from clearsight.probe.reasoner.parsing import parse_action
from clearsight.store import RunStore

THINK = get_template("think")
VLCAL = get_template("vlcal")
PROBLEM = bundled_problems(1)[0]
GOLD = PROBLEM.gold
#: A capital dotted I: its lower-case form ("i" and a combining dot) is two characters.
DOTTED_I = "\u0130"
#: Segmenting the largest generated text (1 MB) may take this long on a loaded CI machine; the
#: quadratic segmenter took about 80 s for 40 kB.
SECONDS_PER_MB = 8.0


@pytest.mark.parametrize(
    ("template", "written"),
    [
        (THINK, f"<think>\n{DOTTED_I}stanbul {DOTTED_I}S 58 coins.\n</think>\n\nAnswer: {GOLD}"),
        (VLCAL, f"<vision>{DOTTED_I}{DOTTED_I} 58 coins</vision>\n<answer>{GOLD}</answer>"),
        (
            None,
            f"Observation: {DOTTED_I}{DOTTED_I}{DOTTED_I} 58.\nReasoning: 58 - 9.\nAnswer: {GOLD}",
        ),
    ],
    ids=["think", "vlcal", "canonical"],
)
def test_a_capital_dotted_i_shifts_no_span(template: object, written: str) -> None:
    """The answer after text holding İ is read where it stands, the gold, recorded as correct
    (spans found in a lower-case copy pointed one character on per İ: a cut answer, recorded
    wrong)."""
    t = default_template() if template is None else template
    got = parse_generated(written, t, False)  # type: ignore[arg-type]
    assert got.trajectory is not None, got.reason
    assert got.trajectory.answer == GOLD
    assert is_correct(got.trajectory.answer, PROBLEM)
    if t.native:
        traj = parse_written(written, t)
        assert traj.text[traj.spans[2][0] : traj.spans[2][1]] == GOLD
        assert traj.vision.endswith("58 coins.") or traj.vision.endswith("58 coins")


def test_tags_in_another_case_are_found_in_the_text_itself() -> None:
    written = f"{DOTTED_I}{DOTTED_I}\nOBSERVATION: 33 pencils.\nREASONING: 40 - 3.\nANSWER: 37"
    traj = parse_trajectory(written)
    assert (traj.vision, traj.reasoning, traj.answer) == ("33 pencils.", "40 - 3.", "37")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from([*"ab .!?\n3,", DOTTED_I]), max_size=60))
def test_every_character_but_white_space_lies_in_one_sentence(text: str) -> None:
    """The splitter keeps every character: "The value is 3.5 apples." was read as the one
    sentence "5 apples." (its start dropped), and spans are ordered and apart."""
    spans = sentence_spans(text)
    kept = "".join(text[a:b] for a, b in spans)
    assert kept.replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")
    bounds = [b for span in spans for b in span]
    assert bounds == sorted(bounds)
    assert all(text[a:b] == text[a:b].strip() and a < b for a, b in spans)
    assert sentences(text) == [text[a:b] for a, b in spans]


def test_a_number_with_a_decimal_point_stays_in_its_sentence() -> None:
    assert sentences("The value is 3.5 apples. Next one") == [
        "The value is 3.5 apples.",
        "Next one",
    ]


#: Pieces a generated text is built of: words, sentence ends, numbers with decimal points, a
#: dotted I, tags of both native templates, answer and reasoning cues, a confidence slot.
PIECES = [
    "word ",
    "3.5",
    "x",
    ".",
    "!?",
    "\n",
    " ",
    DOTTED_I,
    "<think>",
    "</think>",
    "<vision>",
    "<answer>",
    "Answer: 37",
    "so 2 x 5 = 10",
    "the answer is ",
    "Confidence (0-10): ",
    "wait",
]


@st.composite
def long_texts(draw: st.DrawFn) -> str:
    """A text of up to 1 MB: a drawn head, a drawn chunk repeated to a drawn length (the
    stretch without a sentence end that made segmentation quadratic), a drawn tail."""
    part = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)
    head, chunk, tail = draw(part), draw(part.filter(bool)), draw(part)
    size = draw(st.sampled_from([1_000, 40_000, 120_000, 1_000_000]))
    return head + chunk * max(1, size // len(chunk)) + tail


def _segment_all(text: str) -> None:
    """Everything that segments a model's text: both native templates and the canonical one
    (as a generation is read), and the probe's reading of a reasoner's output."""
    for t in (THINK, VLCAL, default_template()):
        parse_generated(text, t, False)
    sentences(text)
    parse_action(text, ("A", "B", "C", "D"))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(long_texts())
def test_segmentation_is_linear_in_the_texts_length(text: str) -> None:
    """Any text up to 1 MB is segmented within a bound linear in its length (a think block of
    120 kB without a sentence end never finished)."""
    started = time.perf_counter()
    _segment_all(text)
    elapsed = time.perf_counter() - started
    print(f"segmented {len(text)} characters in {elapsed:.3f} s")  # shown with -s
    assert elapsed < 0.5 + SECONDS_PER_MB * len(text) / 1e6, (len(text), elapsed)


def test_a_megabyte_think_block_without_a_sentence_end_is_segmented_at_once() -> None:
    body = "word 3.5 " * (1_000_000 // 9)
    text = f"<think>\n{body}\n</think>\n\nAnswer: 37"
    started = time.perf_counter()
    got = parse_generated(text, THINK, False)
    elapsed = time.perf_counter() - started
    print(f"segmented {len(text)} characters in {elapsed:.3f} s")
    assert got.trajectory is not None
    assert got.trajectory.answer == "37"
    assert elapsed < SECONDS_PER_MB


# --------------------------------------------------------------------------------------------
# Replaced surrogates


LONE = "\ud83d"  # the first half of an emoji's UTF-16 pair, alone


def test_a_trajectorys_replaced_surrogates_are_recorded_in_its_raw_output(
    tmp_path: Path,
) -> None:
    """A generation whose reply held a lone surrogate is stored with U+FFFD in its text and
    ``extra.replaced_surrogates`` in its raw output (the README: every protocol says where)."""
    written = f"I see 33 pencils {LONE}.\n</think>\n\nAnswer: 37"
    backend = ScriptedBackend(matched=[(PROBLEM.question, Response(texts=(written,)))])
    (got,) = generate_trajectories(backend, [PROBLEM], [None], THINK, max_new_tokens=50)
    assert not isinstance(got, Exception)
    assert got.replaced == ("texts[0]",)
    assert "\ufffd" in got.text
    assert LONE not in got.text

    script = tmp_path / "model.jsonl"
    entries = [
        {"match": PROBLEM.question, "texts": [written]},
        {"match": "</think>", "hidden": {"sequence_probs": {"8": 1.0}}},
    ]
    script.write_text("".join(json.dumps(e) + "\n" for e in entries))
    config = GroundingConfig(
        model=f"scripted:{script}",
        generator=None,
        n_problems=1,
        trajectory_template="think",
        mask_ratios=(0.0,),
        pairs=False,
        variation=False,
        hesitation=False,
        n_boot=100,
    )
    run = tmp_path / "run"
    run_grounding(config, run, progress=False)
    with RunStore.open(run, read_only=True) as store:
        (record,) = list(store.iter_records(kind="grounding.trajectory"))
    assert record.raw["extra"] == {"replaced_surrogates": ["texts[0]"]}
    assert "\ufffd" in record.raw["text"]


def test_a_trajectory_without_surrogates_keeps_its_raw_output_as_before() -> None:
    backend = ScriptedBackend(
        matched=[(PROBLEM.question, Response(texts=("a.\n</think>\nAnswer: 37",)))]
    )
    (got,) = generate_trajectories(backend, [PROBLEM], [None], THINK, max_new_tokens=50)
    assert not isinstance(got, Exception)
    assert got.replaced == ()


def test_a_generators_edit_records_its_replaced_surrogates() -> None:
    """A TGS-Bench edit keeps the generator's reply (its attempt): where its lone surrogates
    were replaced is stored with it, and an edit of a clean reply is stored as before."""
    span = "There are 33 pencils in the box."
    lone = ScriptedBackend(ordered=[Response(texts=(f"There are 38 pencils in the box{LONE}.",))])
    (edit,) = inject_errors(lone, [("vision", span)], [0])
    assert isinstance(edit, Edit)
    assert edit.model_attempt == "There are 38 pencils in the box\ufffd."
    assert edit.to_json()["extra"] == {"replaced_surrogates": ["texts[0]"]}
    clean = ScriptedBackend(ordered=[Response(texts=("There are 38 pencils in the box.",))])
    (edit,) = inject_errors(clean, [("vision", span)], [0])
    assert isinstance(edit, Edit)
    assert "extra" not in edit.to_json()
    assert set(edit.to_json()) == {
        "axis",
        "original",
        "edited",
        "injector",
        "rule",
        "model_attempt",
        "model_refused",
        "similarity",
    }
