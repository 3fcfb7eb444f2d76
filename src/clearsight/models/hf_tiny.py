"""Tiny randomly initialised transformers checkpoints, built offline, for tests and benchmarks.

No registry package carries a real VLM, so the ``hf`` backend's code paths for each family are
exercised on small models built from configs with the *real* SmolLM2 tokenizer (taken from the
embedded model's cached conversion, :func:`clearsight.models.embedded.smollm2_dir`) and saved
as ordinary local checkpoints, loaded back through ``hf:<directory>``:

* ``llama`` — a 2-layer Llama-architecture causal LM with SmolLM2's chat template;
* ``idefics3`` — the SmolVLM architecture (SigLIP-style tower, pixel shuffle, Llama text model)
  with SmolVLM's chat template and image tokens; its processor builds without torchvision;
* ``qwen2vl`` — Qwen2-VL (multimodal RoPE) laid out like a real checkpoint: tokenizer with the
  Qwen2-VL chat template and an image-processor config naming ``Qwen2VLProcessor``, which needs
  torchvision for its video half, so the backend's own pad-token expansion is what loads it.

Weights are drawn with a wide ``initializer_range`` (0.2) so next-token distributions are peaked
enough that image, context and masking effects are far above float noise. About 6 M parameters
(mostly the 49k-token embedding) and under a second each to build.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from clearsight.validate import InputError

TinyKind = Literal["llama", "idefics3", "qwen2vl"]
TINY_KINDS: tuple[TinyKind, ...] = ("llama", "idefics3", "qwen2vl")

#: SmolVLM's chat template: ``<|im_start|>User:<image>text<end_of_utterance>\nAssistant:``.
IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}"
    "{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

#: Qwen2-VL's chat template (an image is <|vision_start|><|image_pad|><|vision_end|>).
QWEN2VL_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}"
    "<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% endif %}"
)


def _text_config(vocab: int, pad: int) -> dict[str, Any]:
    return {
        "vocab_size": vocab,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "initializer_range": 0.2,
        "pad_token_id": pad,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def build_tiny(kind: TinyKind, out: Path, tokenizer_dir: Path | None = None, seed: int = 0) -> Path:
    """Build the tiny ``kind`` checkpoint into ``out`` (created) and return ``out``.

    ``tokenizer_dir`` holds the SmolLM2 tokenizer (default: the embedded model's cached copy,
    converted on first use).
    """
    import torch
    import transformers

    tf: Any = transformers
    if kind not in TINY_KINDS:
        raise InputError(f"unknown tiny model {kind!r}; one of {', '.join(TINY_KINDS)}")
    if tokenizer_dir is None:
        from clearsight.models.embedded import smollm2_dir

        tokenizer_dir = smollm2_dir()
    tok = tf.AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(seed)
    if kind == "llama":
        text = _text_config(len(tok), tok.pad_token_id)
        config = tf.LlamaConfig(**text, tie_word_embeddings=True)
        tf.LlamaForCausalLM(config).eval().save_pretrained(out)
        tok.save_pretrained(out)
    elif kind == "idefics3":
        _idefics3(tf, tok, out)
    else:
        _qwen2vl(tf, tok, out)
    return out


def _idefics3(tf: Any, tok: Any, out: Path) -> None:
    from transformers.models.idefics3.image_processing_pil_idefics3 import (
        Idefics3ImageProcessorPil,
    )

    extra = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"]
    extra += [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    tok.add_special_tokens({"additional_special_tokens": extra})
    image_processor = Idefics3ImageProcessorPil(
        size={"longest_edge": 64}, max_image_size={"longest_edge": 32}, do_image_splitting=True
    )
    processor = tf.Idefics3Processor(
        image_processor, tok, image_seq_len=4, chat_template=IDEFICS3_TEMPLATE
    )
    config = tf.Idefics3Config(
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
            "initializer_range": 0.2,
        },
        text_config={"model_type": "llama", **_text_config(len(tok), tok.pad_token_id)},
        scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        initializer_range=0.2,
    )
    model = tf.Idefics3ForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = [tok.convert_tokens_to_ids("<end_of_utterance>"), 2]
    model.save_pretrained(out)
    processor.save_pretrained(out)


def _qwen2vl(tf: Any, tok: Any, out: Path) -> None:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    specials = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
    tok.add_special_tokens({"additional_special_tokens": specials})
    tok.chat_template = QWEN2VL_TEMPLATE
    start, end, image, video = tok.convert_tokens_to_ids(specials)
    text = _text_config(len(tok), tok.pad_token_id)
    # head_dim 16: the three RoPE sections (time, height, width) split its 8 frequencies
    text["rope_parameters"] = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": [2, 3, 3],
    }
    config = tf.Qwen2VLConfig(
        vision_config={
            "depth": 2,
            "embed_dim": 32,
            "hidden_size": 64,
            "num_heads": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "initializer_range": 0.2,
        },
        text_config=text,
        image_token_id=image,
        video_token_id=video,
        vision_start_token_id=start,
        vision_end_token_id=end,
        initializer_range=0.2,
    )
    model = tf.Qwen2VLForConditionalGeneration(config).eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    Qwen2VLImageProcessorPil(min_pixels=28 * 28, max_pixels=56 * 84).save_pretrained(out)
    meta = json.loads((out / "preprocessor_config.json").read_text())
    meta["processor_class"] = "Qwen2VLProcessor"  # what a real checkpoint says
    (out / "preprocessor_config.json").write_text(json.dumps(meta, indent=1))
