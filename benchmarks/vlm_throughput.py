"""VLM throughput: a SmolVLM-256M-sized Idefics3 through clearsight against the loop a user writes.

The model is built offline with random weights at SmolVLM-256M's sizes (a 12-layer SigLIP
tower at 512 px with patch 16, pixel shuffle by 4 to 64 tokens per 512-px crop, SmolLM2-135M's
30-layer text model; its processor at one 512-px crop per image, :data:`PROCESSOR`), with the
SmolLM2 tokenizer, saved as a local checkpoint and loaded through ``hf:<directory>``. The items
are the sweep's real ones for a few bundled scenes (identification with two abstain wordings,
verification true and distractor, a verbalized wording; clean and one fog level: nine items per
image), run on the CPU in this one process:

* ``hf_vlm_items_per_s`` — the sweep's units run through clearsight (``run_unit``: images
  rendered, requests built, one ``complete`` per unit, records made);
* ``naive_items_per_s`` — per item: the processor's chat template, the processor on the
  item's image, ``generate(max_new_tokens=1, output_scores=True)`` for the letter
  probabilities (the softmax of the first step's scores at the letters' tokens, ``"A"`` and
  ``" A"`` summed as clearsight sums its spellings), one greedy ``generate`` per verbalized
  item;
* ``hf_vlm_items_per_s_vs_naive`` — the ratio (goal >= 3 on a 2-core machine);
* ``vision_encodes_per_distinct_image`` — crops through the vision tower in clearsight's run
  (a forward hook on it) over the crops of the distinct images it was shown (goal <= 1);
* ``max_abs_prob_diff_vs_naive`` — the largest difference between a letter probability of
  clearsight and of the naive loop, float32 (goal <= 1e-4);
* ``median_letter_mass_naive`` and ``max_rel_prob_diff_vs_naive`` — the letters' total
  probability (small under random weights, so the absolute difference says little) and the
  largest relative difference;
* ``verbalized_texts_equal_share`` — the share of verbalized items whose greedy text equals
  the naive loop's (a check, no goal: random weights may tie).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import JsonValue

from _timing import report
from clearsight.models import Request, Response, shared_backend
from clearsight.models.hf_backend import HfBackend
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.unit import SweepUnit, run_unit

#: SmolVLM-256M-Instruct's sizes (its published config.json and preprocessor_config.json).
VISION = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "image_size": 512,
    "patch_size": 16,
}
TEXT = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "max_position_embeddings": 8192,
    "rope_theta": 100000.0,
    "tie_word_embeddings": True,
}
#: Its processor at ``N = 1`` (``size={"longest_edge": N * 512}``, the model card's knob; the
#: published default N = 4 upscales a 451 x 300 scene to 2048 px, 13 crops of 512 px, which a
#: 2-core CPU encodes in minutes per image): one 512-px crop, 64 image tokens per image.
PROCESSOR: dict[str, Any] = {"size": {"longest_edge": 512}, "max_image_size": {"longest_edge": 512}}


def build_smolvlm_256m(out: Path) -> Path:
    """The random-weight SmolVLM-256M-sized checkpoint in ``out`` (see the module docstring)."""
    import torch
    import transformers
    from transformers.models.idefics3.image_processing_pil_idefics3 import (
        Idefics3ImageProcessorPil,
    )

    from clearsight.models.embedded import smollm2_dir
    from fixtures.hf_tiny import IDEFICS3_TEMPLATE, _save, _tokenizer

    tf: Any = transformers
    torch.manual_seed(0)
    extra = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"]
    extra += [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    tok = _tokenizer(tf, smollm2_dir(), extra=extra, template=IDEFICS3_TEMPLATE)
    text = {"model_type": "llama", "vocab_size": len(tok), "pad_token_id": tok.pad_token_id}
    config = tf.Idefics3Config(
        vision_config=VISION,
        text_config={**text, **TEXT},
        scale_factor=4,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
    )
    model = tf.Idefics3ForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = [tok.convert_tokens_to_ids("<end_of_utterance>"), 2]
    image_processor = Idefics3ImageProcessorPil(**PROCESSOR, do_image_splitting=True)
    _save(out, model, tok, image_processor, "Idefics3Processor", image_seq_len=64)
    return out


def sweep_units(
    model: str,
    scenes: tuple[str, ...],
    wordings: tuple[str, ...] = ("mcq.reason", "mcq.generic", "verbal.plain"),
) -> tuple[SweepUnit, ...]:
    """The sweep's units for ``scenes``: clean and one fog level, every task (identification,
    verification true and distractor), in ``wordings`` (by default two letter wordings and one
    verbalized wording: nine items per image)."""
    cfg = SweepConfig(
        scene_ids=scenes,
        models=(model,),
        wordings=wordings,
        controls=("clean",),
        arms=("fog",),
        levels_m=(62.5,),
        max_new_tokens=8,
    )
    return plan_sweep(cfg).units


class Captured:
    """The requests and responses of the backend's ``complete`` calls, and the crops through
    its vision tower (a forward hook)."""

    def __init__(self, backend: HfBackend) -> None:
        self.requests: list[Request] = []
        self.responses: list[Response] = []
        self.crops = 0
        inner = backend.complete

        def complete(requests: Any) -> list[Response]:
            out = inner(requests)
            self.requests += list(requests)
            self.responses += out
            return out

        backend.complete = complete  # type: ignore[method-assign]
        core = backend.model.model  # Idefics3's tower, or Qwen-VL's
        tower = core.visual if hasattr(core, "visual") else core.vision_model
        tower.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        pixels = args[0] if args else kwargs["pixel_values"]
        self.crops += int(pixels.shape[0])


def naive(backend: HfBackend, request: Request) -> tuple[dict[str, float] | str, int]:
    """What the user's loop reads for one request (letter probabilities, or the greedy text),
    and the crops its image takes."""
    import torch
    from PIL import Image

    inputs: Any = backend.inputs
    processor = inputs.processor
    model = backend.model
    image = Image.fromarray(request.messages[0].images[0])
    content = [{"type": "image"}, {"type": "text", "text": request.messages[0].text}]
    chat = [{"role": "user", "content": content}]
    prompt = processor.apply_chat_template(chat, add_generation_prompt=True)
    inputs = processor(text=prompt, images=[image], return_tensors="pt")
    inputs = inputs.to(model.device, dtype=model.dtype)  # floating tensors only take the dtype
    pixels = inputs["pixel_values"]  # Idefics3: (1, crops, ...); Qwen-VL: (patches, ...)
    crops = int(pixels.shape[1] if pixels.ndim == 5 else pixels.shape[0])
    with torch.inference_mode():
        if request.generate:
            out = model.generate(**inputs, max_new_tokens=request.decoding.max_new_tokens)
            new = out[0, inputs["input_ids"].shape[1] :]
            return processor.decode(new, skip_special_tokens=True), crops
        out = model.generate(
            **inputs, max_new_tokens=1, output_scores=True, return_dict_in_generate=True
        )
    probs = torch.softmax(out.scores[0][0].float(), dim=-1)
    tok = processor.tokenizer
    letters = {}
    for c in request.candidates:
        ids = {tok.convert_tokens_to_ids(t) for t in (c, "Ġ" + c)}
        letters[c] = float(sum(probs[i] for i in ids))
    return letters, crops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default="skimage-chelsea,skimage-coffee")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--model-dir", type=Path, help="An Idefics3 checkpoint to use instead (a quick check)"
    )
    args = parser.parse_args()
    scenes = tuple(args.scenes.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="clearsight-vlm-"))
    try:
        path = args.model_dir or build_smolvlm_256m(tmp / "smolvlm-256m-random")
        options: dict[str, JsonValue] = {
            "batch_size": args.batch_size,
            "dtype": "float32",
            "device": "cpu",
        }
        _compare(*run_ours(f"hf:{path}", options, scenes))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_ours(
    model: str, options: dict[str, JsonValue], scenes: tuple[str, ...]
) -> tuple[HfBackend, Captured, float]:
    """The sweep's units for ``scenes`` through clearsight's backend for ``model`` with
    ``options`` (this process's shared one), captured: the backend, what it was asked and
    answered, and the seconds the units took (a load before the call is not counted)."""
    backend = shared_backend(model, options)
    assert isinstance(backend, HfBackend)
    captured = Captured(backend)
    units = [
        SweepUnit(u.model, options, u.scene, u.depth_model, u.items, u.max_new_tokens)
        for u in sweep_units(model, scenes)
    ]
    t0 = time.perf_counter()
    records = [r for u in units for r in run_unit(u)]
    ours = time.perf_counter() - t0
    assert all(r.status == "ok" for r in records), [r.error for r in records][:3]
    return backend, captured, ours


def _compare(backend: HfBackend, captured: Captured, ours: float) -> None:
    """Run the naive loop over the captured requests and print the figures."""
    import hashlib

    encoded = captured.crops  # the naive loop's encodes are not clearsight's
    n = len(captured.requests)
    report("items", n, 0)
    report("hf_vlm_items_per_s", n / ours)  # first: kept if the naive loop is cut short
    crops_of: dict[str, int] = {}
    diffs: list[float] = []
    rel: list[float] = []
    mass: list[float] = []
    texts_equal: list[bool] = []
    t0 = time.perf_counter()
    for request, response in zip(captured.requests, captured.responses, strict=True):
        got, crops = naive(backend, request)
        pixels = request.messages[0].images[0]
        crops_of[hashlib.blake2b(pixels.tobytes(), digest_size=16).hexdigest()] = crops
        if isinstance(got, str):
            texts_equal.append(response.texts[0] == got)
        else:
            assert response.candidate_probs is not None
            diffs += [abs(response.candidate_probs[c] - p) for c, p in got.items()]
            rel += [abs(response.candidate_probs[c] / p - 1) for c, p in got.items() if p > 0]
            mass.append(sum(got.values()))
    theirs = time.perf_counter() - t0
    report("distinct_images", len(crops_of), 0)
    report("naive_items_per_s", n / theirs)
    report("hf_vlm_items_per_s_vs_naive", theirs / ours, 2)
    report("vision_encodes_per_distinct_image", encoded / sum(crops_of.values()), 3)
    report("max_abs_prob_diff_vs_naive", float(np.max(diffs)), 8)
    # random weights spread the next token over 49k entries: the letters' mass is small, so
    # the relative difference is the informative one
    report("median_letter_mass_naive", float(np.median(mass)), 8)
    report("max_rel_prob_diff_vs_naive", float(np.max(rel)), 8)
    report("verbalized_texts_equal_share", float(np.mean(texts_equal)) if texts_equal else 1.0)


if __name__ == "__main__":
    main()
