"""clearsight's ``hf`` backend against lmms-eval's own model class: same checkpoint, same items.

Run it with ``make bench-peers`` (it builds ``.venv-peers``: lmms-eval 0.7.3 beside clearsight
and the project's pinned transformers, the project's ``.venv`` untouched).

Which family. The brief named SmolVLM (Idefics3) and Qwen2-VL; lmms-eval 0.7.3 runs neither here:

* Idefics3/SmolVLM has no class of its own (``idefics2`` loads ``Idefics2ForConditionalGeneration``
  only); its generic ``huggingface`` class calls every processor with ``audios=``, which
  transformers 5 refuses (``ValueError: You passed keyword argument `audios` which is
  deprecated``) on the first batch;
* its ``qwen2_vl`` class builds ``AutoProcessor``, whose Qwen2-VL video processor requires
  torchvision, and imports ``qwen_vl_utils``, which imports torchvision; the index's torchvision
  0.28 links CUDA libraries the CPU build of torch 2.13 lacks and fails on import
  (``operator torchvision::nms does not exist``), so no torchvision runs beside the CPU pin.

The next family, LLaVA, runs through lmms-eval's ``llava_hf`` class (its processor has no video
half; the class implements ``loglikelihood``): a checkpoint built offline with random weights at
the widths of the published LLaVA-Interleave-Qwen-0.5B (``llava`` model type: a SigLIP-so400m
tower, 1152 wide at 384 px with patch 14, 729 image tokens, every one kept; a two-layer
projector; Qwen2-0.5B's 896-wide text model, 14 heads, 2 key-value heads) and its processor's
settings (one 384 x 384 image, no crops), with the published model's vision depth (26 layers)
and fewer text layers (``--vision-layers``, ``--text-layers``; default 26 and 2: the 24 text
layers of the published model take minutes per round on a 2-core CPU shared with other jobs),
saved in float32 (both sides compute in it, so the probabilities can be compared closely). It
uses the SmolLM2 tokenizer with LLaVA's image token and LLaVA-1.5's template ("USER:
<image>\\n... ASSISTANT:", which renders lmms-eval's string prompt and clearsight's
image-then-text message to the same text), and an untied output layer whose rows for the
letters every question offers (A to C) are scaled by :data:`LETTER_BOOST`, so the greedy next
token of the random model is an offered letter, as a trained model's is, and
"same greedy letter" compares the two computations rather than two arg-maxes of noise.

The items are the sweep's own for one bundled scene (clean and one fog level; identification,
verification true and distractor; two abstain wordings, ``mcq.reason`` and ``mcq.generic``: six
items per image). lmms-eval answers them as its users run multiple choice, through
``generate_until`` (greedy, one new token: the letter; ``llava_hf`` asserts ``batch_size`` 1, so
1 is its best), driven as its evaluator drives a model (``Instance`` objects, the documents in
``task_dict``); clearsight through ``complete`` (every option's probability from one pass, an
image's questions sharing its encode and prefill), batch 16. Each side uses the attention it
uses by default: lmms-eval's class leaves ``attn_implementation`` to transformers (``sdpa`` for
LLaVA), clearsight's backend gets what a new run gives the family (``sdpa``:
:mod:`clearsight.models.attention`); ``attention_lmms_eval`` and ``attention_clearsight`` name
them. Each side runs ``--rounds`` times in
turn in this one process; the best time of each counts. Printed:

* ``items_per_s_vs_lmms_eval`` — clearsight's items per second over lmms-eval's (goal >= 5);
* ``vision_encodes_per_item_lmms_eval`` and ``vision_encodes_per_item_clearsight`` — images
  through the vision tower per item (a forward hook on the tower);
* ``answer_agreement_vs_lmms_eval`` — the share of items where lmms-eval's greedy text is the
  letter with clearsight's largest probability (``lmms_eval_answers_an_offered_letter_share``:
  how often lmms-eval's greedy token, over the whole vocabulary, is a letter the item offers);
* ``offered_letter_argmax_agreement_vs_lmms_eval`` and ``max_rel_prob_diff_vs_lmms_eval`` — the
  offered letters' probabilities of lmms-eval's run, read from its own ``generate`` call's
  prompt pass (a forward hook on the model: the softmax of the last logits at each letter's two
  spellings, ``"A"`` and ``" A"``, summed as clearsight sums them), against clearsight's: the
  share of items whose most likely offered letter is clearsight's, and the largest relative
  difference over every offered letter of every item
  (``lmms_eval_prompt_pass_matches_its_answer_share`` checks the hook's rows are the items':
  its greedy letter is the largest of them wherever it answered a letter);
* ``loglikelihood_items_per_s_lmms_eval`` and ``loglikelihood_agreement_vs_lmms_eval`` — its
  ``loglikelihood`` over every option of the first ``--loglikelihood-items`` items (one forward
  pass per option, as the class computes it): its speed, and the share of those items whose
  most likely option (least loss) is clearsight's letter.

Under transformers 5 the class's ``loglikelihood`` fails on its own context-length call (it
passes the prompt's ``<image>`` without the image, which transformers 5's processors refuse);
the script then prints the error instead of those two figures.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _timing import report
from clearsight.models import Request, Response, attention, shared_backend
from clearsight.models.hf_backend import HfBackend
from clearsight.models.resolve import resolve_options
from clearsight.sweep.unit import item_request
from vlm_throughput import sweep_units

#: How much the output rows of the option letters are scaled (see the module docstring).
LETTER_BOOST = 24.0
LETTERS = ("A", "B", "C", "D", "E")
#: The letters whose output rows are scaled: the ones every sweep question offers (a question
#: offers three to five), so the greedy token, over the whole vocabulary, is an offered one.
BOOSTED = ("A", "B", "C")
#: (vision, text) layers of the published model.
PUBLISHED_LAYERS = (26, 24)


def boost_letters(model: Any, tok: Any) -> None:
    """Untie the output layer from the embeddings and scale its rows of the letters' two
    spellings by :data:`LETTER_BOOST`; left padding (batched generation's). Saved in float32:
    ``llava_hf`` loads the checkpoint's dtype (``auto``), clearsight runs float32 on the CPU."""
    import torch

    head = model.get_output_embeddings()
    head.weight = torch.nn.Parameter(head.weight.detach().clone())
    model.config.get_text_config().tie_word_embeddings = False
    model.config.tie_word_embeddings = False
    with torch.no_grad():
        for letter in BOOSTED:
            for spelling in (letter, "Ġ" + letter):
                head.weight[tok.convert_tokens_to_ids(spelling)] *= LETTER_BOOST
    tok.padding_side = "left"


def build_llava(out: Path, layers: tuple[int, int]) -> Path:
    """LLaVA-Interleave-Qwen-0.5B's widths and processor, ``layers`` (vision, text)."""
    import torch
    import transformers
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    from clearsight.models.embedded import smollm2_dir
    from fixtures.hf_tiny import LLAVA_TEMPLATE, _save, _tokenizer

    tf: Any = transformers
    torch.manual_seed(0)
    tok = _tokenizer(tf, smollm2_dir(), named={"image_token": "<image>"}, template=LLAVA_TEMPLATE)
    vision = {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 384}
    vision |= {"intermediate_size": 4304, "num_attention_heads": 16, "patch_size": 14}
    vision["num_hidden_layers"] = layers[0]
    text = {"model_type": "qwen2", "vocab_size": len(tok), "pad_token_id": tok.pad_token_id}
    text |= {"hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14}
    text |= {"num_key_value_heads": 2, "num_hidden_layers": layers[1], "bos_token_id": 1}
    text |= {"eos_token_id": 2, "max_position_embeddings": 32768, "rope_theta": 1000000.0}
    config = tf.LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tok.image_token_id,
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        image_seq_length=729,
    )
    model = tf.LlavaForConditionalGeneration(config).eval()
    boost_letters(model, tok)
    processor = SiglipImageProcessorPil(size={"height": 384, "width": 384})
    _save(
        out,
        model,
        tok,
        processor,
        "LlavaProcessor",
        patch_size=14,
        vision_feature_select_strategy="full",
        num_additional_image_tokens=0,
    )
    return out


class TowerCount:
    """Images through a model's vision tower (a forward pre-hook: its pixel rows)."""

    def __init__(self, model: Any) -> None:
        self.images = 0
        model.model.vision_tower.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        pixels = args[0] if args else kwargs["pixel_values"]
        self.images += int(pixels.shape[0])


class FirstStep:
    """The letter probabilities of each prompt pass of a model's ``generate`` (a forward hook:
    the softmax of the last position's logits, each letter's two spellings summed)."""

    def __init__(self, model: Any, tok: Any) -> None:
        self.rows: list[dict[str, float]] = []
        self.ids = {c: {tok.convert_tokens_to_ids(t) for t in (c, "Ġ" + c)} for c in LETTERS}
        model.register_forward_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: Any, kwargs: dict[str, Any], output: Any) -> None:
        import torch

        ids = kwargs.get("input_ids")
        if ids is None or ids.shape[1] <= 1:  # a decode step
            return
        probs = torch.softmax(output.logits[:, -1].float(), dim=-1)
        for row in probs:
            self.rows.append({c: float(sum(row[i] for i in s)) for c, s in self.ids.items()})


TASK, SPLIT = "clearsight_sweep", "test"


def lmms_docs(lm: Any, requests: list[Request]) -> None:
    """The items as lmms-eval documents in ``lm.task_dict`` (what its evaluator hands a model)."""
    from PIL import Image

    docs = [
        {"image": Image.fromarray(r.messages[0].images[0]), "text": r.messages[0].text}
        for r in requests
    ]
    lm.task_dict = {TASK: {SPLIT: docs}}


def _visual(doc: dict[str, Any]) -> list[Any]:
    return [doc["image"]]


def _instance(kind: str, args: tuple[Any, ...], doc_id: int) -> Any:
    from lmms_eval.api.instance import Instance

    meta = {"task": TASK, "doc_id": doc_id, "repeats": 1}
    return Instance(kind, args, idx=0, metadata=meta)


def _messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    content = [{"type": "image", "url": doc["image"]}, {"type": "text", "text": doc["text"]}]
    return [{"role": "user", "content": content}]


def generate_instances(requests: list[Request]) -> list[Any]:
    """``generate_until`` instances of the items (greedy, one new token), as lmms-eval's
    evaluator builds them for a chat model class (``llava_hf`` resolves to its chat class)."""
    gen = {"max_new_tokens": 1, "temperature": 0}
    return [
        _instance("generate_until", (r.messages[0].text, _messages, dict(gen), i, TASK, SPLIT), i)
        for i, r in enumerate(requests)
    ]


@dataclass
class Side:
    """One side's best time, answers and vision encodes per item."""

    seconds: float = float("inf")
    letters: list[str] = field(default_factory=list)
    probs: list[dict[str, float]] = field(default_factory=list)
    images: float = 0.0


def run_lmms(
    lm: Any, probes: tuple[TowerCount, FirstStep], requests: list[Request], side: Side
) -> None:
    """One timed ``generate_until`` over every item; the answers and prompt-pass letter
    probabilities (in the items' order) kept."""
    counter, first = probes
    counter.images, first.rows = 0, []
    instances = generate_instances(requests)
    t0 = time.perf_counter()
    results = lm.generate_until(instances)
    seconds = time.perf_counter() - t0
    # the chat class runs the items in their order (its sort key is the equal generation
    # arguments), one prompt pass each: the hook's rows are the items'
    assert len(first.rows) == len(requests), (len(first.rows), len(requests))
    if seconds < side.seconds:
        side.seconds, side.probs = seconds, list(first.rows)
        side.letters = [r.text.strip() for r in results]
    side.images = counter.images / len(requests)


def run_clearsight(
    backend: HfBackend, counter: TowerCount, requests: list[Request], side: Side
) -> None:
    """One timed ``complete`` over every item; the option probabilities kept."""
    counter.images = 0
    t0 = time.perf_counter()
    responses: list[Response] = backend.complete(requests)
    seconds = time.perf_counter() - t0
    probs = [dict(r.candidate_probs or {}) for r in responses]
    if seconds < side.seconds:
        side.seconds, side.probs = seconds, probs
        side.letters = [max(p, key=p.__getitem__) for p in probs]
    side.images = counter.images / len(requests)


def loglikelihood(lm: Any, requests: list[Request], ours: Side) -> None:
    """lmms-eval's ``loglikelihood`` of every option of ``requests``: its speed and whether its
    most likely option is clearsight's letter."""
    instances = [
        _instance("loglikelihood", (r.messages[0].text, c, _visual, i, TASK, SPLIT), i)
        for i, r in enumerate(requests)
        for c in r.candidates
    ]
    t0 = time.perf_counter()
    try:
        losses = lm.loglikelihood(instances)
    except ValueError as exc:  # transformers 5 refuses its context-length call
        print(f"lmms_eval_loglikelihood_failed: {exc}")
        return
    seconds = time.perf_counter() - t0
    report("loglikelihood_items_per_s_lmms_eval", len(requests) / seconds)
    at = 0
    agree = []
    for i, r in enumerate(requests):
        nll = {c: float(loss) for c, (loss, _) in zip(r.candidates, losses[at:], strict=False)}
        at += len(r.candidates)
        agree.append(min(nll, key=nll.__getitem__) == ours.letters[i])
    report("loglikelihood_agreement_vs_lmms_eval", sum(agree) / len(agree))


def compare(root: Path, args: argparse.Namespace) -> None:
    """Build the checkpoint, run both sides in turn, print the figures."""
    from lmms_eval.models import get_model

    layers = (args.vision_layers, args.text_layers)
    path = build_llava(root / "llava", layers)
    report("layers_vision", layers[0], 0)
    report("layers_text", layers[1], 0)
    model = f"hf:{path}"
    with attention.by_family(True):  # the options a new run gives the model
        options = resolve_options(model, {"dtype": "float32", "device": "cpu", "batch_size": 16})
    backend = shared_backend(model, options)
    assert isinstance(backend, HfBackend)
    units = sweep_units(model, tuple(args.scenes.split(",")), ("mcq.reason", "mcq.generic"))
    requests = [item_request(item, u.depth_model) for u in units for item in u.items]
    report("items", len(requests), 0)
    cls = get_model("llava_hf")
    report("lmms_eval_class_is_chat", float(not cls.is_simple), 0)
    lm = cls(pretrained=str(path), device="cpu", device_map="cpu", batch_size=1)
    lmms_docs(lm, requests)
    print(f"attention_lmms_eval: {lm.model.config._attn_implementation}")
    print(f"attention_clearsight: {backend.model.config._attn_implementation}", flush=True)
    backend.complete(requests[:1])  # warm-up: first-call costs on both sides
    lm.generate_until(generate_instances(requests[:1]))
    probes = (TowerCount(lm.model), FirstStep(lm.model, lm.tokenizer))
    counter = TowerCount(backend.model)
    ours, theirs = Side(), Side()
    for _ in range(args.rounds):
        run_clearsight(backend, counter, requests, ours)
        run_lmms(lm, probes, requests, theirs)
    _figures(requests, ours, theirs)
    if args.loglikelihood_items:
        loglikelihood(lm, requests[: args.loglikelihood_items], ours)


def _figures(requests: list[Request], ours: Side, theirs: Side) -> None:
    """The comparison's lines."""
    n = len(requests)
    report("lmms_eval_items_per_s", n / theirs.seconds)
    report("clearsight_items_per_s", n / ours.seconds)
    report("items_per_s_vs_lmms_eval", theirs.seconds / ours.seconds, 2)
    report("vision_encodes_per_item_lmms_eval", theirs.images)
    report("vision_encodes_per_item_clearsight", ours.images)
    agree = [a == b for a, b in zip(ours.letters, theirs.letters, strict=True)]
    report("answer_agreement_vs_lmms_eval", sum(agree) / n)
    offered = [t in r.candidates for r, t in zip(requests, theirs.letters, strict=True)]
    report("lmms_eval_answers_an_offered_letter_share", sum(offered) / n)
    # the hook's rows are taken as the items' in order: its greedy letter must be the largest
    # of the probabilities read for that item wherever it answered a letter (a swallowed
    # generate error answers "": no letter)
    mapped = [
        max(p, key=p.__getitem__) == t
        for p, t in zip(theirs.probs, theirs.letters, strict=True)
        if t in LETTERS
    ]
    report("lmms_eval_prompt_pass_matches_its_answer_share", sum(mapped) / max(len(mapped), 1))
    options = [{c: p[c] for c in r.candidates} for r, p in zip(requests, theirs.probs, strict=True)]
    best = [
        max(p, key=p.__getitem__) == ours_letter
        for p, ours_letter in zip(options, ours.letters, strict=True)
    ]
    report("offered_letter_argmax_agreement_vs_lmms_eval", sum(best) / n)
    rel = [
        abs(ours_p[c] / p - 1)
        for ours_p, theirs_p in zip(ours.probs, options, strict=True)
        for c, p in theirs_p.items()
        if p > 0
    ]
    report("max_rel_prob_diff_vs_lmms_eval", max(rel), 6)
    mass = [sum(p.values()) for p in options]
    report("median_offered_letter_mass_lmms_eval", float(np.median(mass)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default="skimage-chelsea")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--vision-layers",
        type=int,
        default=PUBLISHED_LAYERS[0],
        help=f"vision layers built (the published model's: {PUBLISHED_LAYERS[0]})",
    )
    parser.add_argument(
        "--text-layers",
        type=int,
        default=2,
        help=f"text layers built (the published model's: {PUBLISHED_LAYERS[1]})",
    )
    parser.add_argument(
        "--loglikelihood-items",
        type=int,
        default=2,
        help="items whose options lmms-eval's loglikelihood scores (one pass per option)",
    )
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
    root = Path(tempfile.mkdtemp(prefix="clearsight-peers-"))
    try:
        compare(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
