"""The perceiver backend: perception, then detector-scored or LLM answers, behind the
Backend protocol (see :mod:`clearsight.perceiver` for the method)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

import numpy as np
import numpy.typing as npt
from pydantic import JsonValue

from clearsight.execute import progress
from clearsight.models.base import (
    Capabilities,
    Decoding,
    Message,
    PartialBatchError,
    Request,
    RequestFailedError,
    Response,
)
from clearsight.perceiver.answers import detector_probs, free_answer, letter_texts
from clearsight.perceiver.colours import load_tables
from clearsight.perceiver.detector import (
    Detector,
    as_rgb,
    load_detector,
)
from clearsight.perceiver.options import PerceiverOptions, parse_options
from clearsight.perceiver.perception import Perception, evidence_text, perceive
from clearsight.perceiver.photo import Reading, about_photo, photo_probs, read_photo
from clearsight.perceiver.question import (
    YES_NO,
    ParsedQuestion,
    normalise,
    parse_question,
    question_type,
)
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend

#: The modes by their argument after ``perceiver:``.
Mode = Literal["llm", "detector"]
MODES: Final[tuple[Mode, ...]] = ("llm", "detector")
#: What bare ``perceiver`` means (see the module docstring and scripts/perceiver_eval.py).
DEFAULT_MODE: Final[Mode] = "llm"


#: What LLM mode puts before the question (the evidence text follows it).
LLM_PREAMBLE: Final = "An object detector looked at the image. Its findings (scores 0-1):"


def llm_prompt(evidence: str, question: str) -> str:
    """The text-only prompt of LLM mode: the evidence, then the question."""
    return f"{LLM_PREAMBLE}\n{evidence}\n\n{question}"


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


#: The cloze sentence of the reason-naming abstain option: its words shortened and said of the
#: object in the red box, so that every sentence of a question shares one prefix and the
#: option is not penalised for its length (the full wording was never chosen on the bundled
#: scenes, this one is chosen on 5-7 % of blank and 1.95 m fog images, clean accuracy equal).
CLOZE_NOT_VISIBLE: Final = "The object in the red box is not visible."


def cloze_question(q: ParsedQuestion) -> str:
    """The question the LLM answers in its own words under the cloze read-out: "What is the
    object in the red box?" for identification, else the question's stem."""
    if q.kind == "identify":
        return "What is the object in the red box?"
    stem = q.text.split(f"\n{q.letters[0]}", 1)[0].strip() if q.letters else q.text
    return stem or q.text


def cloze_sentences(q: ParsedQuestion) -> dict[str, str]:
    """Per option letter, the sentence whose probability under the LLM scores that option.

    Identification: "The object in the red box is a dog." (the option's text); verification of
    ``X``: "Yes, the object in the red box is a X." / "No, the object in the red box is not a
    X."; an abstain option: :data:`CLOZE_NOT_VISIBLE` when it names visibility, else its text
    as a sentence ("I don't know."); options the perceiver cannot map: "The answer is <text>."
    """
    out: dict[str, str] = {}
    for letter, text in zip(q.letters, q.options, strict=True):
        if letter == q.abstain:
            words = text.strip().rstrip(".")
            out[letter] = CLOZE_NOT_VISIBLE if "not visible" in words.lower() else f"{words}."
        elif q.kind == "identify" and q.categories.get(letter) is not None:
            out[letter] = f"The object in the red box is {_article(text)} {text.strip()}."
        elif q.kind == "verify" and q.asked is not None and normalise(text) in YES_NO:
            out[letter] = "Yes." if normalise(text) == "yes" else "No."
        else:
            out[letter] = f"The answer is {text.strip()}."
    return out


def _image_and_question(request: Request) -> tuple[npt.NDArray[np.uint8] | None, str]:
    images = [im for m in request.messages for im in m.images]
    users = [m for m in request.messages if m.role == "user"]
    question = (users[-1] if users else request.messages[-1]).text
    return (images[0] if images else None), question


def _image_key(image: npt.NDArray[np.uint8]) -> str:
    digest = hashlib.blake2b(np.ascontiguousarray(image).data, digest_size=16)
    digest.update(repr((image.shape, image.dtype.str)).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class _Plan:
    """Where a request's read-outs are among LLM mode's inner requests: the candidate scoring
    (``score_at``), the generation (``gen_at``) and the cloze sentence of each option."""

    score_at: int | None
    gen_at: int | None
    sentences: dict[str, str]


class PerceiverBackend:
    """``perceiver[:llm|:detector]``: a detector plus (LLM mode) a text LLM behind the
    :class:`~clearsight.models.base.Backend` protocol."""

    capabilities = Capabilities(images=True, generate=True, candidate_probs=True, n_per_call=True)

    def __init__(
        self,
        mode: Mode,
        options: PerceiverOptions,
        detector: Detector | None = None,
        llm: Backend | None = None,
    ) -> None:
        self.mode: Mode = mode
        self.options = options
        self.name = f"perceiver:{mode}"
        self.detector: Detector = detector or load_detector(
            options.detector, threads=options.detector_threads
        )
        load_tables()  # every perception names the colours of what it detects
        self.llm: Backend | None = None
        if mode == "llm":
            if llm is None:
                from clearsight.models import shared_backend, split_model_spec

                if split_model_spec(options.llm)[0] == "perceiver":
                    raise InputError("the perceiver's llm cannot be a perceiver")
                llm = shared_backend(options.llm, options.llm_options)
            self.llm = llm

    # ---------------------------------------------------------------- perception

    def perceive(
        self, image: npt.NDArray[np.uint8] | None, cache: dict[str, Perception]
    ) -> Perception:
        """The perception of ``image`` (each distinct image once per ``cache``)."""
        if image is None:
            return Perception(0, 0, False, (0, 0, 0, 0), (), 0.0, 0.0, 0.0, True, None, 0)
        rgb = as_rgb(image)
        key = _image_key(rgb)
        if key not in cache:
            cache[key] = perceive(rgb, self.detector, self.options)
        return cache[key]

    def _extra(self, p: Perception, evidence: str, q: ParsedQuestion) -> dict[str, object]:
        return {
            "mode": self.mode,
            "detector": self.options.detector,
            "box_found": p.box_found,
            "box": list(p.box),
            "too_small": p.too_small,
            "evidence": evidence,
            "detections": [o.to_json() for o in p.objects[:20]],
            "brightness": round(p.brightness, 4),
            "contrast": round(p.contrast, 4),
            "box_contrast": round(p.box_contrast, 4),
            "question_kind": q.kind,
        }

    # ---------------------------------------------------------------- the call

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        """One response per request; perception is shared by requests showing the same image.
        A request that fails alone (an unreadable image) fails with its reason
        (:class:`~clearsight.models.base.PartialBatchError`)."""
        cache: dict[str, Perception] = {}
        prepared: list[tuple[Perception, ParsedQuestion, str, float] | RequestFailedError] = []
        readings: list[Reading | None] = []
        # looking at the images is half the call in LLM mode (SmolLM2 reads then), all of it else
        looking = 0.5 if self.mode == "llm" else 1.0
        for n, request in enumerate(requests):
            progress.report(n * looking, len(requests))
            looked = self._look(request, cache)
            if isinstance(looked, RequestFailedError):
                prepared.append(looked)
                continue
            prepared.append(looked[0])
            readings.append(looked[1])
        idx = [i for i, x in enumerate(prepared) if not isinstance(x, RequestFailedError)]
        ok = [x for x in prepared if not isinstance(x, RequestFailedError)]
        oks = [requests[i] for i in idx]
        if self.mode == "llm":
            answers = self._llm(oks, ok)
        else:
            answers = [
                self._detector(r, *x, reading)
                for r, x, reading in zip(oks, ok, readings, strict=True)
            ]
        it = iter(answers)
        results: list[Response | RequestFailedError] = [
            x if isinstance(x, RequestFailedError) else next(it) for x in prepared
        ]
        if any(isinstance(r, RequestFailedError) for r in results):
            raise PartialBatchError(results)
        return [r for r in results if isinstance(r, Response)]

    def _look(
        self, request: Request, cache: dict[str, Perception]
    ) -> tuple[tuple[Perception, ParsedQuestion, str, float], Reading | None] | RequestFailedError:
        """Perceive ``request``'s image (``cache``: perceptions by image, shared by requests
        showing the same one) and parse its question: the perception, the question, the
        evidence text and the seconds spent, and in detector mode the photo's reading where the
        question is about a photo; a RequestFailedError for an image that cannot be read."""
        t0 = time.perf_counter()
        try:
            image, question = _image_and_question(request)
            p = self.perceive(image, cache)
        except InputError as exc:
            return RequestFailedError(str(exc), 1)
        q = parse_question(question)
        # colours for free-form questions and questions about a photo (which, before
        # "(A) text" options were read, were all free-form to the parser)
        evidence = evidence_text(p, free_form=q.kind == "free" or about_photo(p, q))
        if image is None:
            evidence = "No image was given."
        reading = None
        if self.mode == "detector" and image is not None and about_photo(p, q):
            reading = read_photo(p, q, as_rgb(image))
        return (p, q, evidence, time.perf_counter() - t0), reading

    def _detector(
        self,
        request: Request,
        p: Perception,
        q: ParsedQuestion,
        evidence: str,
        spent: float,
        reading: Reading | None,
    ) -> Response:
        """Detector mode's response: the box rule, or the photo's reading of the question
        (``reading``, for a question about a photo with no red box)."""
        if reading is None:
            probs = detector_probs(p, q)
        else:
            probs = photo_probs(reading, q) if q.letters else {}
        texts: tuple[str, ...] = ()
        if request.generate:
            if probs:
                texts = letter_texts(probs, request, q.verbalized)
            else:
                reply = free_answer(p, q.text) if reading is None else reading.reply
                texts = (reply,) * request.n
        candidates = None
        if request.candidates:
            candidates = {c.strip(): probs.get(c.strip(), 0.0) for c in request.candidates}
        extra = self._extra(p, evidence, q)
        extra["option_probs"] = {k: round(v, 6) for k, v in probs.items()}
        if reading is not None:
            extra["question_type"] = question_type(q.stem)
        return Response(
            texts=texts,
            candidate_probs=candidates,
            latency_s=spent,
            extra=extra,
        )

    def _llm(
        self,
        requests: Sequence[Request],
        prepared: Sequence[tuple[Perception, ParsedQuestion, str, float]],
    ) -> list[Response]:
        """LLM mode: one inner request per read-out a request needs (cloze scoring of the
        options, generation), all sent to the LLM in one batch."""
        assert self.llm is not None
        inner: list[Request] = []
        plans = [
            self._plan(request, q, evidence, inner)
            for request, (_, q, evidence, _) in zip(requests, prepared, strict=True)
        ]
        t0 = time.perf_counter()
        with progress.within(0.5, 1.0):
            answers = self.llm.complete(inner) if inner else []
        share = (time.perf_counter() - t0) / max(len(requests), 1)
        return [
            self._answer(request, x, plan, inner, answers, share)
            for request, x, plan in zip(requests, prepared, plans, strict=True)
        ]

    def _plan(
        self, request: Request, q: ParsedQuestion, evidence: str, inner: list[Request]
    ) -> _Plan:
        """Append the inner requests ``request`` needs to ``inner``; where their answers are."""
        score_at = gen_at = None
        sentences: dict[str, str] = {}
        if request.candidates:
            score_at = len(inner)
            if self.options.readout == "cloze" and q.letters:
                sentences = cloze_sentences(q)
                inner.append(
                    Request(
                        (Message.user(llm_prompt(evidence, cloze_question(q))),),
                        Decoding(max_new_tokens=1, seed=request.decoding.seed),
                        candidates=tuple(sentences.values()),
                        generate=False,
                    )
                )
            elif request.generate:
                score_at = None  # scored together with the generation below
            else:
                inner.append(
                    Request(
                        (Message.user(llm_prompt(evidence, q.text)),),
                        Decoding(max_new_tokens=1, seed=request.decoding.seed),
                        candidates=request.candidates,
                        generate=False,
                    )
                )
        if request.generate:
            gen_at = len(inner)
            direct = request.candidates if score_at is None else ()
            inner.append(
                Request(
                    (Message.user(llm_prompt(evidence, q.text)),),
                    request.decoding,
                    n=request.n,
                    candidates=direct,
                )
            )
            if direct:
                score_at = gen_at
        return _Plan(score_at, gen_at, sentences)

    def _answer(
        self,
        request: Request,
        prepared: tuple[Perception, ParsedQuestion, str, float],
        plan: _Plan,
        inner: Sequence[Request],
        answers: Sequence[Response],
        share: float,
    ) -> Response:
        """The response to ``request`` from the LLM's answers to its inner requests."""
        p, q, evidence, spent = prepared
        extra: dict[str, object] = {}
        candidates = None
        texts: tuple[str, ...] = ()
        token_logprobs = None
        usage: dict[str, int] = {}
        for at in {plan.score_at, plan.gen_at} - {None}:
            assert at is not None
            extra.update(answers[at].extra)
            for k, v in answers[at].usage.items():
                usage[k] = usage.get(k, 0) + int(v)
        if plan.score_at is not None:
            candidates = _scored(request, plan.sentences, answers[plan.score_at])
            if plan.sentences:
                extra["cloze"] = plan.sentences
            prompt_key = "cloze_prompt" if plan.sentences else "llm_prompt"
            extra[prompt_key] = inner[plan.score_at].messages[0].text
        if plan.gen_at is not None:
            texts = answers[plan.gen_at].texts
            token_logprobs = answers[plan.gen_at].token_logprobs
            extra["llm_prompt"] = inner[plan.gen_at].messages[0].text
        extra.update(self._extra(p, evidence, q))
        extra["llm"] = self.options.llm
        extra["readout"] = "cloze" if plan.sentences else "direct"
        return Response(
            texts=texts,
            token_logprobs=token_logprobs,
            candidate_probs=candidates,
            usage=usage,
            latency_s=spent + share,
            extra=extra,
        )


def _scored(request: Request, sentences: Mapping[str, str], answer: Response) -> dict[str, float]:
    """Each of ``request``'s candidates' probability from the LLM's scoring ``answer``: of its
    cloze sentence where the options were scored as ``sentences``, else of the candidate
    itself."""
    raw = answer.candidate_probs or {}
    if not sentences:
        return {c: float(raw.get(c, 0.0)) for c in request.candidates}
    return {c: float(raw.get(sentences.get(c.strip(), ""), 0.0)) for c in request.candidates}


def make_perceiver(arg: str, options: Mapping[str, JsonValue]) -> PerceiverBackend:
    """``perceiver`` (the default mode, :data:`DEFAULT_MODE`), ``perceiver:llm`` or
    ``perceiver:detector``; options are :class:`PerceiverOptions` fields."""
    mode = arg or DEFAULT_MODE
    if mode not in MODES:
        raise InputError(
            f"unknown perceiver mode {arg!r}: use perceiver, perceiver:llm or perceiver:detector"
        )
    return PerceiverBackend(mode, parse_options(options))
