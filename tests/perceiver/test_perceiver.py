"""The perceiver: red-box finding, perception and its cache, detector-scored answers, LLM mode,
odd images, n samples — with a scripted detector where only the plumbing is tested and the
real CenterNet and SmolLM2 where the answers matter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from clearsight.models import (
    Decoding,
    Message,
    PartialBatchError,
    Request,
    RequestFailedError,
    Response,
    load_backend,
)
from clearsight.perceiver import (
    ABSTAIN_MASS,
    DEFAULT_MODE,
    PerceiverBackend,
    PerceiverOptions,
    band_mask,
    colour_name,
    erase_band,
    evidence_text,
    find_red_box,
    make_perceiver,
    parse_question,
    perceive,
)
from clearsight.perceiver.detector import Detection
from clearsight.physics import draw_box
from clearsight.sweep.readouts import letter_readout, parse_verbalized
from clearsight.tasks import identification_question, verbalized_question, verification_questions
from clearsight.validate import InputError

PRIOR = {"motorcycle": 0.25, "person": 0.25, "cat": 0.25, "dog": 0.25}


# ----------------------------------------------------------------------------- helpers


@dataclass
class ScriptedDetector:
    """Returns fixed detections (in whole-image pixels) and counts its calls."""

    detections: list[Detection] = field(default_factory=list)
    calls: list[tuple[int, int]] = field(default_factory=list)
    name: str = "scripted"
    input_size: int = 512

    def detect(self, image: np.ndarray, score_threshold: float = 0.3) -> list[Detection]:
        self.calls.append(image.shape[:2])
        return [d for d in self.detections if d.score > score_threshold]


@dataclass
class RecordingLLM:
    """A text backend that records what it was sent. Candidates: "B" gets 0.6, a sentence
    naming a motorcycle 0.05, anything else 0.1 (letters) or 0.001 (sentences)."""

    name: str = "recording"
    sent: list[Request] = field(default_factory=list)

    @property
    def capabilities(self):
        from clearsight.models import Capabilities

        return Capabilities(generate=True, candidate_probs=True, n_per_call=True)

    @staticmethod
    def prob(candidate: str) -> float:
        if len(candidate) == 1:
            return 0.6 if candidate == "B" else 0.1
        return 0.05 if "motorcycle" in candidate else 0.001

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        self.sent += list(requests)
        return [
            Response(
                texts=("Answer: B\nConfidence: 60",) * r.n if r.generate else (),
                candidate_probs={c: self.prob(c) for c in r.candidates} or None,
                extra={"inner": True},
            )
            for r in requests
        ]


def textured(h: int = 120, w: int = 160, seed: int = 0) -> np.ndarray:
    """A random image with no pure red pixel (red channel < 255)."""
    return np.random.default_rng(seed).integers(0, 250, (h, w, 3), dtype=np.uint8)


def boxed(image: np.ndarray, box: tuple[int, int, int, int], t: int = 8) -> np.ndarray:
    return draw_box(image.copy(), box, t)


def letter_request(image: np.ndarray, prompt: str, letters: Sequence[str]) -> Request:
    return Request(
        (Message.user(image, prompt),),
        Decoding(max_new_tokens=1),
        candidates=tuple(letters),
        generate=False,
    )


def scripted_backend(
    detections: list[Detection], mode: str = "detector", **options: object
) -> tuple[PerceiverBackend, ScriptedDetector]:
    det = ScriptedDetector(detections)
    llm = RecordingLLM() if mode == "llm" else None
    backend = PerceiverBackend(mode, PerceiverOptions(**options), detector=det, llm=llm)  # type: ignore[arg-type]
    return backend, det


def motorcycle_question(abstain: str | None = "reason"):
    return identification_question(
        "motorcycle",
        PRIOR,
        np.random.default_rng(3),
        abstain=abstain,  # type: ignore[arg-type]
    )


# ----------------------------------------------------------------------------- the red box


@pytest.mark.parametrize(
    "box",
    [
        (30, 40, 120, 90),  # inside
        (3, 5, 60, 50),  # bands clipped at the left and top
        (0, 0, 100, 120),  # spans the height from the left: one strip, box on the larger side
        (10, 0, 100, 120),  # spans the height: two strips enclose it
        (0, 20, 160, 70),  # spans the width from the left edge
        (100, 60, 160, 120),  # bottom-right corner: L-shaped outline
        (70, 50, 72, 53),  # a tiny box
    ],
)
def test_red_box_found_exactly(box):
    image = boxed(textured(), box)
    assert find_red_box(image) == box


def test_red_box_other_thickness_and_largest_outline():
    image = boxed(textured(), (20, 20, 60, 60), t=3)
    image = boxed(image, (80, 30, 150, 110), t=3)  # the larger of two outlines wins
    assert find_red_box(image, thickness=3) == (80, 30, 150, 110)


def test_no_red_box():
    assert find_red_box(textured()) is None
    grey = np.full((50, 60, 3), 128, np.uint8)
    assert find_red_box(grey) is None
    solid = textured()
    solid[20:60, 30:90] = (255, 0, 0)  # a red object, not an outline
    assert find_red_box(solid) is None


def test_erase_band_removes_exactly_the_band():
    image = textured()
    box = (30, 40, 120, 90)
    out = erase_band(boxed(image, box), box, 8)
    band = band_mask(image.shape[:2], box, 8)
    assert not np.all(out == (255, 0, 0), axis=-1).any()
    np.testing.assert_array_equal(out[~band], image[~band])


def test_colour_names():
    def patch(rgb: tuple[int, int, int]) -> np.ndarray:
        return np.full((4, 4, 3), rgb, np.uint8)

    assert colour_name(patch((200, 20, 20))) == "red"
    assert colour_name(patch((30, 60, 200))) == "blue"
    assert colour_name(patch((40, 160, 40))) == "green"
    assert colour_name(patch((128, 128, 128))) == "grey"
    assert colour_name(patch((250, 250, 250))) == "white"
    assert colour_name(patch((10, 10, 10))) == "black"
    assert colour_name(patch((120, 70, 30))) == "brown"


# ----------------------------------------------------------------------------- questions


def test_parse_questions_of_the_sweep():
    q = motorcycle_question()
    parsed = parse_question(q.prompt)
    assert parsed.kind == "identify"
    assert parsed.letters == q.letters
    assert parsed.abstain == q.abstain == "E"
    assert parsed.categories[q.correct] == "motorcycle"
    assert not parsed.verbalized
    assert parse_question(verbalized_question(q, "verbal.plain.v1").prompt).verbalized
    yes, no = verification_questions(
        "motorcycle", PRIOR, np.random.default_rng(0), abstain="generic"
    )
    for v in (yes, no):
        pv = parse_question(v.prompt)
        assert (pv.kind, pv.asked, pv.abstain) == ("verify", v.asked_category, "C")
    assert parse_question("How many people are there?").kind == "free"


# ----------------------------------------------------------------------------- detector mode


def test_detector_mode_scores_options_from_the_detections():
    box = (30, 40, 120, 90)
    dets = [
        Detection("motorcycle", 0.8, (31.0, 41.0, 119.0, 89.0)),
        Detection("person", 0.9, (130.0, 5.0, 158.0, 60.0)),  # elsewhere: no evidence
    ]
    backend, _ = scripted_backend(dets)
    q = motorcycle_question()
    (r,) = backend.complete([letter_request(boxed(textured(), box), q.prompt, q.letters)])
    probs = r.candidate_probs
    assert probs is not None
    # m = 0.8: the motorcycle gets 0.8 + 0.2 / 4, the others 0.05 each, abstain 0
    assert probs[q.correct] == pytest.approx(0.85)
    assert sum(probs.values()) == pytest.approx(1.0)
    assert probs["E"] == 0.0
    assert r.extra["box_found"] is True
    assert r.extra["box"] == list(box)
    assert "Inside the red box: motorcycle (0.80)" in r.extra["evidence"]
    assert "Elsewhere: person (0.90, top right)" in r.extra["evidence"]


def test_detector_mode_abstains_when_nothing_is_seen_in_the_box():
    backend, _ = scripted_backend([Detection("person", 0.9, (130.0, 5.0, 158.0, 60.0))])
    q = motorcycle_question()
    (r,) = backend.complete(
        [letter_request(boxed(textured(), (30, 40, 90, 90)), q.prompt, q.letters)]
    )
    lr = letter_readout(r.candidate_probs, q.answer_letters, q.abstain)
    assert lr.answer == "E"
    assert r.candidate_probs["E"] == pytest.approx(ABSTAIN_MASS)
    assert lr.confidence == pytest.approx(0.25)  # a uniform guess among the content options
    # no abstain option offered: a uniform guess
    q2 = motorcycle_question(abstain=None)
    (r2,) = backend.complete(
        [letter_request(boxed(textured(), (30, 40, 90, 90)), q2.prompt, q2.letters)]
    )
    assert set(r2.candidate_probs.values()) == {0.25}


def test_detector_mode_verification_and_verbalized_replies():
    box = (30, 40, 120, 90)
    backend, _ = scripted_backend([Detection("motorcycle", 0.7, (30.0, 40.0, 120.0, 90.0))])
    image = boxed(textured(), box)
    yes, no = verification_questions(
        "motorcycle", PRIOR, np.random.default_rng(0), abstain="reason"
    )
    ry, rn = backend.complete([letter_request(image, q.prompt, q.letters) for q in (yes, no)])
    assert ry.candidate_probs["A"] == pytest.approx(0.7 + 0.3 / 2)  # Yes
    assert rn.candidate_probs["B"] == pytest.approx(0.7 + 0.3 / 2)  # No
    verbal = verbalized_question(motorcycle_question(), "verbal.plain.v1")
    (rv,) = backend.complete([Request((Message.user(image, verbal.prompt),))])
    letter, conf = parse_verbalized(rv.texts[0], verbal.letters)
    assert letter == verbal.correct
    assert conf == pytest.approx(round(100 * (0.7 + 0.3 / 4)) / 100)


def test_n_samples_greedy_repeat_and_sampled_draw():
    backend, _ = scripted_backend([Detection("motorcycle", 0.5, (30.0, 40.0, 120.0, 90.0))])
    q = verbalized_question(motorcycle_question(), "verbal.plain.v1")
    image = boxed(textured(), (30, 40, 120, 90))
    greedy = Request((Message.user(image, q.prompt),), Decoding(max_new_tokens=24), n=5)
    sampled = Request(
        (Message.user(image, q.prompt),),
        Decoding(max_new_tokens=24, temperature=1.0, seed=1),
        n=200,
    )
    rg, rs = backend.complete([greedy, sampled])
    assert len(rg.texts) == 5
    assert len(set(rg.texts)) == 1
    assert len(rs.texts) == 200
    letters = [parse_verbalized(t, q.letters)[0] for t in rs.texts]
    # p(correct) = 0.5 + 0.5 / 4 = 0.625; 200 draws land well inside 0.45 .. 0.8
    assert 0.45 < letters.count(q.correct) / 200 < 0.8
    assert len(set(letters)) > 1
    (again,) = backend.complete([sampled])
    assert again.texts == rs.texts  # seeded


def test_free_form_questions_in_detector_mode():
    dets = [
        Detection("person", 0.9, (10.0, 10.0, 40.0, 100.0)),
        Detection("person", 0.8, (120.0, 10.0, 150.0, 100.0)),
        Detection("car", 0.7, (50.0, 50.0, 110.0, 110.0)),
    ]
    image = textured()
    image[50:110, 50:110] = (20, 40, 210)  # a blue car
    backend, _ = scripted_backend(dets)
    asks = ["How many people are there?", "What colour is the car?", "What is in the image?"]
    responses = backend.complete([Request((Message.user(image, a),), n=2) for a in asks])
    assert [r.texts for r in responses] == [("2", "2"), ("blue", "blue"), ("person", "person")]
    assert responses[0].extra["box_found"] is False
    assert "No red box found" in responses[0].extra["evidence"]
    assert "blue" in responses[1].extra["evidence"]  # free-form evidence carries colours


# ----------------------------------------------------------------------------- odd images, cache


def test_grey_rgba_and_tiny_images():
    box = (30, 40, 120, 90)
    backend, det = scripted_backend([Detection("motorcycle", 0.8, (30.0, 40.0, 120.0, 90.0))])
    q = motorcycle_question()
    rgba = np.concatenate([boxed(textured(), box), np.full((120, 160, 1), 255, np.uint8)], axis=2)
    grey = textured()[:, :, 0]
    tiny = textured(20, 24)
    r_rgba, r_grey, r_tiny = backend.complete(
        [letter_request(im, q.prompt, q.letters) for im in (rgba, grey, tiny)]
    )
    assert r_rgba.extra["box_found"] is True
    assert r_rgba.extra["box"] == list(box)
    assert r_grey.extra["box_found"] is False  # answered from the whole image
    assert r_grey.extra["box"] == [0, 0, 160, 120]
    assert r_tiny.extra["too_small"] is True
    assert "too small (24x20 px)" in r_tiny.extra["evidence"]
    assert r_tiny.candidate_probs["E"] == pytest.approx(ABSTAIN_MASS)
    assert (20, 24) not in det.calls  # the tiny image never reached the detector
    (r_none,) = backend.complete([Request((Message.user(q.prompt),), candidates=q.letters)])
    assert r_none.extra["evidence"] == "No image was given."
    assert r_none.candidate_probs["E"] == pytest.approx(ABSTAIN_MASS)


def test_detector_runs_once_per_distinct_image_in_a_batch():
    backend, det = scripted_backend([Detection("motorcycle", 0.8, (30.0, 40.0, 60.0, 70.0))])
    q = motorcycle_question()
    first = boxed(textured(200, 300, seed=1), (30, 40, 60, 70))
    second = boxed(textured(200, 300, seed=2), (30, 40, 60, 70))
    batch = [first, second, first.copy(), second, first]  # a copy is the same image
    requests = [letter_request(im, q.prompt, q.letters) for im in batch]
    responses = backend.complete(requests)
    assert len(responses) == 5
    whole = [c for c in det.calls if c == (200, 300)]
    crops = [c for c in det.calls if c != (200, 300)]
    assert len(whole) == 2
    assert len(crops) == 2
    backend.complete(requests[:1])  # a new batch: perceived again
    assert len(det.calls) == 6


def test_a_bad_image_fails_alone():
    backend, _ = scripted_backend([])
    q = motorcycle_question()
    good = letter_request(boxed(textured(), (30, 40, 90, 90)), q.prompt, q.letters)
    bad = letter_request(np.zeros((10, 10, 3), np.float32), q.prompt, q.letters)  # type: ignore[arg-type]
    with pytest.raises(PartialBatchError) as info:
        backend.complete([good, bad])
    ok, failed = info.value.results
    assert isinstance(ok, Response)
    assert isinstance(failed, RequestFailedError)
    assert "uint8" in failed.reason


def test_factory_and_options():
    with pytest.raises(InputError, match="mode"):
        make_perceiver("vision", {})
    with pytest.raises(InputError, match="crop_factor"):
        make_perceiver("detector", {"crop_factor": 0.5})
    with pytest.raises(InputError, match=r"^invalid perceiver options: colour: unknown field$"):
        make_perceiver("detector", {"colour": "red"})
    assert DEFAULT_MODE in ("llm", "detector")


# ----------------------------------------------------------------------------- LLM mode


def test_llm_mode_cloze_readout_sends_evidence_and_maps_sentences_to_letters():
    box = (30, 40, 120, 90)
    backend, _ = scripted_backend(
        [Detection("motorcycle", 0.8, (30.0, 40.0, 120.0, 90.0))], mode="llm"
    )
    q = motorcycle_question()
    image = boxed(textured(), box)
    letter = letter_request(image, q.prompt, q.letters)
    gen = Request((Message.user(image, "What is in the red box?"),), Decoding(temperature=1), n=3)
    r_letter, r_gen = backend.complete([letter, gen])
    llm = backend.llm
    assert isinstance(llm, RecordingLLM)
    cloze, generation = llm.sent
    assert all(not m.images for m in cloze.messages)  # text only
    prompt = cloze.messages[-1].text
    assert "Inside the red box: motorcycle (0.80)" in prompt
    assert prompt.endswith("What is the object in the red box?")
    assert not cloze.generate
    sentences = dict(zip(q.letters, cloze.candidates, strict=True))
    assert sentences[q.correct] == "The object in the red box is a motorcycle."
    assert sentences["E"] == "The object in the red box is not visible."
    assert r_letter.candidate_probs == {x: (0.05 if x == q.correct else 0.001) for x in q.letters}
    assert r_letter.extra["cloze"] == sentences
    assert r_letter.extra["readout"] == "cloze"
    assert r_letter.extra["inner"] is True
    # generation: the question verbatim after the evidence, n samples passed through
    assert generation.messages[-1].text.endswith("What is in the red box?")
    assert generation.n == 3
    assert r_gen.texts == ("Answer: B\nConfidence: 60",) * 3


def test_llm_mode_letter_readout_passes_the_question_verbatim():
    backend, _ = scripted_backend(
        [Detection("motorcycle", 0.8, (30.0, 40.0, 120.0, 90.0))], mode="llm", readout="letter"
    )
    q = motorcycle_question()
    (r,) = backend.complete(
        [letter_request(boxed(textured(), (30, 40, 120, 90)), q.prompt, q.letters)]
    )
    assert isinstance(backend.llm, RecordingLLM)
    (sent,) = backend.llm.sent
    assert sent.messages[-1].text.endswith(q.prompt)
    assert sent.candidates == q.letters
    assert r.candidate_probs == {x: (0.6 if x == "B" else 0.1) for x in q.letters}


# ----------------------------------------------------------------------------- real models


def scene_image(scene_id: str, target: int = 0) -> tuple[np.ndarray, str]:
    from clearsight.scenes.bundled import load_bundled_scene

    scene = load_bundled_scene(scene_id)
    t = scene.targets[target]
    return boxed(np.asarray(scene.image), t.box.as_tuple()), t.category


@pytest.mark.parametrize(
    ("scene_id", "category"),
    [("skimage-astronaut", "person"), ("skimage-stereo-motorcycle", "motorcycle")],
)
def test_evidence_names_the_boxed_object(centernet, scene_id, category):
    image, truth = scene_image(scene_id)
    assert truth == category
    p = perceive(image, centernet, PerceiverOptions())  # type: ignore[arg-type]
    assert p.box_found
    assert p.in_box
    assert p.in_box[0].label == category
    assert f"Inside the red box: {category} (" in evidence_text(p)


def test_detector_mode_answers_the_clean_motorcycle_question(centernet):
    image, _ = scene_image("skimage-stereo-motorcycle")
    backend = PerceiverBackend("detector", PerceiverOptions(), detector=centernet)  # type: ignore[arg-type]
    q = motorcycle_question()
    (r,) = backend.complete([letter_request(image, q.prompt, q.letters)])
    lr = letter_readout(r.candidate_probs, q.answer_letters, q.abstain)
    assert lr.answer == q.correct
    assert r.candidate_probs[q.correct] > 0.6


@pytest.fixture(scope="module")
def smollm2(smollm2_path: Path) -> object:
    return load_backend("hf:smollm2-135m", {})


@pytest.mark.slow
def test_llm_mode_with_smollm2(centernet, smollm2):
    image, _ = scene_image("skimage-stereo-motorcycle")
    backend = PerceiverBackend("llm", PerceiverOptions(), detector=centernet, llm=smollm2)  # type: ignore[arg-type]
    q = motorcycle_question()
    free = Request(
        (Message.user(image, "What is in the red box?"),),
        Decoding(max_new_tokens=8, temperature=1.0, seed=0),
        n=3,
    )
    r_letter, r_free = backend.complete([letter_request(image, q.prompt, q.letters), free])
    probs = r_letter.candidate_probs
    assert letter_readout(probs, q.answer_letters, q.abstain).answer == q.correct
    assert probs is not None
    assert set(probs) == set(q.letters)
    assert all(v > 0 for v in probs.values())
    assert sum(probs.values()) <= 1.0 + 1e-6
    assert len(r_free.texts) == 3
    assert all(isinstance(t, str) for t in r_free.texts)
    assert "motorcycle" in r_free.extra["llm_prompt"]
    assert r_letter.extra["mode"] == "llm"


def test_registry_loads_the_perceiver(centernet):
    backend = load_backend("perceiver:detector", {"detector": "centernet"})
    assert backend.name == "perceiver:detector"
    assert backend.capabilities.images
    assert backend.capabilities.n_per_call


def test_demo_asks_both_perceiver_modes_the_main_wording():
    from clearsight.cli import PERCEIVERS, demo_config, demo_models
    from clearsight.perceiver.fetch import verify_models

    if verify_models():
        pytest.skip("detectors not fetched (`make models`)")
    assert set(PERCEIVERS) <= set(demo_models())
    cfg = demo_config()
    assert {m: cfg.wordings_of(m) for m in PERCEIVERS} == dict.fromkeys(PERCEIVERS, ("mcq.reason",))
    assert {cfg.conditions_of(m) for m in PERCEIVERS} == {("clean", "fog", "blank")}
    assert cfg.wordings_of("observer") == cfg.wordings
    assert len(cfg.wordings) == 3
