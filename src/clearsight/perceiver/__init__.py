"""The perceiver: a real, weak VLM built from a COCO detector and a small text LLM.

No package carries a real vision-language model, but every machine can run the COCO detectors
of :mod:`clearsight.perceiver.detector` (NanoDet-g, CenterNet) and the embedded SmolLM2-135M. The
perceiver turns the two into a backend that takes the same chat requests as any VLM (one image
and a question) and answers them from what the detector saw.

**Perception** (once per distinct image in a batch; images are keyed by a hash of their bytes):

1. *The red box.* The sweep draws the target's box last, after degradation, as a band of pure
   red (255, 0, 0) pixels (8 px by default), so it is exact and is found by its colour:
   :func:`find_red_box` takes the connected pure-red components and keeps the largest
   rectangular hole one of them encloses with bands no thicker than twice the box's (a side
   meeting the image border counts as closed, since the band is clipped away there; a box
   spanning the image leaves one or two full-length strips). No box: ``box_found=False`` and
   the question is answered from the whole image.
2. *Erasing the box.* The band is painted over with its nearest non-band pixels (a
   nearest-neighbour inpaint) so the detector does not see a red frame (which it otherwise
   includes in boxes and takes for kites or clocks).
3. *Detection* on the whole image and on a crop around the box enlarged ``crop_factor`` times
   about its centre (at least ``min_crop_px`` a side; skipped when it covers most of the image),
   crop detections mapped back and merged with class-wise NMS (IoU 0.6).
4. *Relation to the box:* a detection's ``match = min(1, IoU(detection, box) / 0.5)``; it is
   listed *in the box* when ``IoU >= 0.25`` or at least 75 % of it lies inside the box,
   otherwise *elsewhere*, with a coarse position (thirds of the image: left / right, top /
   bottom, centre).
5. *Image statistics:* mean and RMS (standard deviation) of the sRGB luma
   ``0.2126 R' + 0.7152 G' + 0.0722 B'`` on [0, 1], over the image and inside the box (the
   box band excluded). Fog lowers the RMS contrast towards 0 (and lifts the mean towards the
   airlight).

Images: HxW / HxWx1 grey is replicated to RGB and an RGBA alpha is dropped (grey images cannot
hold a pure red box: ``box_found=False``). An image with a side under :data:`MIN_SIDE_PX`
(32 px) is not given to the detector — scaled up 13-16 times it only hallucinates — and the
evidence says the image is too small (``too_small=True``); the statistics are still measured.

**Evidence text** (what the LLM reads; also in ``Response.extra["evidence"]``)::

    Inside the red box: dog (0.91). Elsewhere: person (0.85, left), car (0.40, top right).
    Image brightness 0.45, contrast 0.21.

Categories are de-duplicated (best score; ``x3`` when a category was found three times);
``nothing detected`` when the box holds nothing above the threshold. Free-form questions
(no lettered options) and questions about a whole photo get a richer text with counts and the
colour of each object (:func:`~clearsight.perceiver.colours.colour_name`).

**Modes.**

* ``perceiver:llm`` — the LLM (default ``hf:smollm2-135m``) reads the evidence text and a
  question as one text-only user message. Lettered options are scored by the **cloze
  read-out** (option ``readout="cloze"``): the LLM is asked "What is the object in the red
  box?" and each option's letter gets the LLM's probability of the sentence naming it, "The
  object in the red box is a dog." (the reason-naming abstain option: "The object in the red
  box is not visible."; verification: "Yes." / "No." after the question's own stem). The
  probabilities are raw sequence probabilities, not renormalised (they sum to a few per
  cent). Why: asked the lettered question verbatim (``readout="letter"``), SmolLM2-135M
  answers "A" on every item whatever the evidence (it writes "A. cup" when option C is cup —
  it copies the right name but not its letter), while it names the boxed object correctly in
  its own words; on the bundled scenes the cloze read-out is right on 84 % of clean
  identification questions against 28 % for the letter read-out (all "A"). Verification stays
  weak: SmolLM2 says "No." to every Yes/No question; use ``perceiver:detector`` for it.
  Generation (verbalized wordings, free-form questions such as "what colour is the car?")
  gets the evidence and the question verbatim; texts, ``n`` samples and token log-probabilities
  are the LLM's (so a verbalized reply inherits the letter bias: "A. cup" parses as A).
* ``perceiver:detector`` — no LLM; option probabilities come from the detector's class scores
  (:func:`detector_probs`). For identification with content options ``c`` and evidence
  ``e_c = max score x match`` over detections of class ``c``: ``m = max_c e_c`` is the
  probability that one of the options was seen; the options share ``m`` in proportion to
  ``e_c`` and the rest ``1 - m`` ("none seen") uniformly (``p_c = m e_c / sum e + (1 - m) /
  k``, summing to 1). Verification asks about one category ``X``: ``p(Yes) = m s_X + (1 - m)
  / 2`` with ``s_X`` the share of ``X`` among the evidence of every category detected in the
  box and ``m`` the largest evidence there. **Abstention:** when an abstain option is offered
  and *nothing at all* is detected in the box above the threshold (or the image is too small),
  the abstain option gets 0.75 and the content options share 0.25 uniformly; otherwise it
  gets 0. This holds under both abstain wordings — the reason-naming one ("not visible clearly
  enough") and the generic "I don't know" — because the detector's reason is the same either
  way. Verbalized requests get ``Answer: X`` and ``Confidence: NN`` with ``NN = 100 p(X)``;
  free-form questions are answered from the detections (counts for "how many", the colour of
  the named or boxed object for "what colour", else the boxed object's name). With
  ``temperature > 0`` each of the ``n`` samples draws its letter from those probabilities
  (seeded from ``decoding.seed``); greedy decoding repeats the argmax.

**Questions about a whole photo** (no red box found, and the question does not ask about one:
the probe's questions, a player's queries on ``clearsight serve``): detector mode reads the
question by its type — which animal among the animal detections, how many distinct objects of
the asked kind, the colour of the named object's pixels against its surroundings named in
CIELAB, where it is relative to a second object, whether something is there, black and white
or colour — and answers in its own words or by option probabilities
(:mod:`~clearsight.perceiver.photo`); what no detection can say (a brand, a profession) is a
uniform guess, or "I cannot tell; I see ...". LLM mode reads such questions as before, from the
evidence text with colours.

``perceiver`` alone is the default mode, :data:`DEFAULT_MODE` (chosen by the evaluation in
``scripts/perceiver_eval.py``; see that script's docstring for the numbers).

``Response.extra`` holds ``mode``, ``box_found``, ``box``, ``evidence``, ``detections`` (label,
score, box, IoU with the box, in_box, position), ``brightness``, ``contrast``,
``box_contrast``, ``too_small``, the detector and (LLM mode) the prompt the LLM saw.

Modules, in the order of the method: :mod:`~clearsight.perceiver.box` (step 1-2),
:mod:`~clearsight.perceiver.perception` (steps 3-5 and the evidence text),
:mod:`~clearsight.perceiver.question` (reading a question's options),
:mod:`~clearsight.perceiver.answers` (detector mode), :mod:`~clearsight.perceiver.photo` (detector
mode on a whole photo), :mod:`~clearsight.perceiver.colours` (colour names),
:mod:`~clearsight.perceiver.backend` (the backend, LLM mode's cloze read-out),
:mod:`~clearsight.perceiver.options`; the detector's own
parts: :mod:`~clearsight.perceiver.detector` (NanoDet-g, CenterNet),
:mod:`~clearsight.perceiver.tfjs` (the TensorFlow.js graph reader) and
:mod:`~clearsight.perceiver.fetch` (the verified model files).
"""

from clearsight.perceiver.answers import ABSTAIN_MASS, detector_probs
from clearsight.perceiver.backend import DEFAULT_MODE, MODES, PerceiverBackend, make_perceiver
from clearsight.perceiver.box import BOX_COLOUR, band_mask, erase_band, find_red_box
from clearsight.perceiver.colours import colour_name
from clearsight.perceiver.options import MIN_SIDE_PX, PerceiverOptions
from clearsight.perceiver.perception import Perception, evidence_text, perceive
from clearsight.perceiver.question import ParsedQuestion, parse_question

__all__ = [
    "ABSTAIN_MASS",
    "BOX_COLOUR",
    "DEFAULT_MODE",
    "MIN_SIDE_PX",
    "MODES",
    "ParsedQuestion",
    "PerceiverBackend",
    "PerceiverOptions",
    "Perception",
    "band_mask",
    "colour_name",
    "detector_probs",
    "erase_band",
    "evidence_text",
    "find_red_box",
    "make_perceiver",
    "parse_question",
    "perceive",
]
