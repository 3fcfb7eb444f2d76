"""GPU check (run by ``benchmarks/gpu_check.sh``): a Qwen2.5-VL-3B-shaped model in bfloat16.

On a machine with a CUDA GPU, offline: the model is built with random weights at
Qwen2.5-VL-3B-Instruct's published sizes (:data:`VISION`, :data:`TEXT`; the SmolLM2 tokenizer
with Qwen's image markers and chat template, the vocabulary kept at the published 151,936
rows, the processor at its published pixel bounds), saved as a local checkpoint and loaded
through ``hf:<directory>`` with ``batch_size: auto``. The sweep's items for a few bundled
scenes run through clearsight, then through the naive per-item loop of
``benchmarks/vlm_throughput.py`` on the same requests. Printed:

* ``gpu`` and ``build_s`` (building and saving the checkpoint, when built);
* ``vlm_throughput.py``'s figures: ``hf_vlm_items_per_s``, ``naive_items_per_s``,
  ``hf_vlm_items_per_s_vs_naive``, ``vision_encodes_per_distinct_image`` and the letter
  probability differences (bfloat16 both ways);
* ``gpu_busy_share_hf`` and ``gpu_busy_share_naive`` — NVML's utilisation (the share of time
  a kernel ran) sampled every 50 ms during clearsight's run and during the naive loop (with its
  comparisons); ``not measured`` without NVML (``pip install nvidia-ml-py``);
* ``batch_size_auto`` — per image size, the rows ``auto`` chose and how.

Without a CUDA GPU it prints one line and exits with status 77 (skipped) before building
anything. ``--device cpu --model-dir DIR`` runs the same measurement on the CPU with a
checkpoint already built (the script's own check, with a tiny Qwen2.5-VL of the tests).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from _timing import report
from clearsight.models import shared_backend
from vlm_throughput import _compare, run_ours

#: Exit status when there is no CUDA GPU to check (the automake convention for "skipped").
EXIT_SKIPPED = 77
#: Qwen2.5-VL-3B-Instruct's vision tower (its published config.json).
VISION: dict[str, Any] = {
    "depth": 32,
    "hidden_size": 1280,
    "intermediate_size": 3420,
    "num_heads": 16,
    "out_hidden_size": 2048,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "window_size": 112,
    "fullatt_block_indexes": [7, 15, 23, 31],
    "hidden_act": "silu",
}
#: Its text model.
TEXT: dict[str, Any] = {
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 11008,
    "num_hidden_layers": 36,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "max_position_embeddings": 128000,
    "rope_parameters": {
        "rope_type": "default",
        "rope_theta": 1000000.0,
        "mrope_section": [16, 24, 24],
    },
    "tie_word_embeddings": True,
}
#: Its processor's published pixel bounds.
MIN_PIXELS, MAX_PIXELS = 3136, 12845056


def build_qwen25vl_3b(out: Path) -> Path:
    """The random-weight Qwen2.5-VL-3B-shaped checkpoint in ``out``, built on the GPU in
    bfloat16 (see the module docstring)."""
    import torch
    import transformers
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    from clearsight.models.embedded import smollm2_dir
    from fixtures.hf_tiny import _QWEN_SPECIALS, QWEN2VL_TEMPLATE, _save, _tokenizer

    tf: Any = transformers
    torch.manual_seed(0)
    tok = _tokenizer(tf, smollm2_dir(), extra=_QWEN_SPECIALS, template=QWEN2VL_TEMPLATE)
    start, end, image, video = tok.convert_tokens_to_ids(_QWEN_SPECIALS)
    config = tf.Qwen2_5_VLConfig(
        vision_config=VISION,
        text_config={**TEXT, "pad_token_id": tok.pad_token_id},
        image_token_id=image,
        video_token_id=video,
        vision_start_token_id=start,
        vision_end_token_id=end,
    )
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = tf.Qwen2_5_VLForConditionalGeneration(config).eval()
    finally:
        torch.set_default_dtype(torch.float32)
    processor = Qwen2VLImageProcessorPil(
        patch_size=14, merge_size=2, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS
    )
    _save(out, model, tok, processor, "Qwen2_5_VLProcessor")
    del model
    torch.cuda.empty_cache()
    return out


class BusyShare:
    """NVML's GPU utilisation sampled every 50 ms in a thread while the block runs: the mean
    share of time a kernel ran (None without NVML)."""

    def __init__(self) -> None:
        self.samples: list[int] = []
        self._stop = threading.Event()
        try:
            import pynvml  # type: ignore[import-not-found]

            pynvml.nvmlInit()
            self._handle: Any = pynvml.nvmlDeviceGetHandleByIndex(0)
            self._read = pynvml.nvmlDeviceGetUtilizationRates
        except Exception:  # no NVML binding or driver: not measured
            self._handle = None

    def __enter__(self) -> BusyShare:
        if self._handle is not None:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._stop.set()
            self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.samples.append(int(self._read(self._handle).gpu))

    def report(self, name: str) -> None:
        """Print the mean share as ``name`` (or that it was not measured)."""
        if self._handle is None or not self.samples:
            print(f"{name}: not measured (no NVML: pip install nvidia-ml-py)")
        else:
            report(name, sum(self.samples) / len(self.samples) / 100, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default="skimage-chelsea,skimage-coffee,mpl-grace-hopper")
    parser.add_argument("--model-dir", type=Path, help="A Qwen2.5-VL checkpoint built before")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args()
    import torch

    if args.device == "cpu" and args.model_dir is None:
        parser.error("--device cpu needs --model-dir (the 3B checkpoint is built on the GPU)")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: no CUDA GPU here (torch.cuda.is_available() is False): nothing run")
        sys.exit(EXIT_SKIPPED)
    tmp = Path(tempfile.mkdtemp(prefix="clearsight-gpu-check-"))
    try:
        if args.device == "cuda":
            print(f"gpu: {torch.cuda.get_device_name(0)}")
        path = args.model_dir
        if path is None:
            t0 = time.perf_counter()
            path = build_qwen25vl_3b(tmp / "qwen2.5-vl-3b-random")
            report("build_s", time.perf_counter() - t0, 1)
        _measure(f"hf:{path}", tuple(args.scenes.split(",")), args.device)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(model: str, scenes: tuple[str, ...], device: str) -> None:
    """clearsight's run and the naive loop on the sweep's items for ``scenes``, with the GPU's
    busy share of each and ``auto``'s batch sizes."""
    dtype = "bfloat16" if device == "cuda" else "float32"
    options: dict[str, JsonValue] = {"batch_size": "auto", "dtype": dtype, "device": device}
    shared_backend(model, options)  # loaded before the busy share is sampled
    with BusyShare() as ours_busy:
        backend, captured, ours = run_ours(model, options, scenes)
    with BusyShare() as naive_busy:
        _compare(backend, captured, ours)
    ours_busy.report("gpu_busy_share_hf")
    naive_busy.report("gpu_busy_share_naive")
    for size, chosen in backend.batch_sizes.items():
        print(f"batch_size_auto[{size}]: {chosen['rows']} rows ({chosen['how']})")


if __name__ == "__main__":
    main()
