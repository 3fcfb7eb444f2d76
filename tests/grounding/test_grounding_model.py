"""Trajectory grounding with tiny transformers models: elicitation, masking, bad input, runs."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from clearsight.grounding.confidence.elicit import (  # noqa: E402
    Elicited,
    ElicitFailure,
    ElicitRequest,
    elicit,
)
from clearsight.grounding.confidence.numerals import NUMERALS  # noqa: E402
from clearsight.grounding.problems.bundled import bundled_problems  # noqa: E402
from clearsight.grounding.trajectories.trajectory import Trajectory, elicit_messages  # noqa: E402
from clearsight.models.base import Request  # noqa: E402
from clearsight.models.hf import make_hf  # noqa: E402
from clearsight.models.hf_backend import HfBackend  # noqa: E402
from clearsight.models.hf_hidden import candidate_sequences  # noqa: E402

PROBLEM = bundled_problems(1)[0]
TRAJ = Trajectory(
    "The shop starts with 58 coins and gets 2 boxes of 6.",
    "2 x 6 = 12 and 58 + 12 = 70, then 70 - 21 = 49.",
    "49",
)


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """Tiny models run fastest on one thread, and on a shared machine two threads spin-wait
    (measured: this file took 6 s on one thread against 60-100 s on two under load)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def llama(tiny_llama_path: Path) -> HfBackend:
    return make_hf(str(tiny_llama_path), {"batch_size": 4})


@pytest.fixture(scope="module")
def one_layer(hf_models_dir: Path, smollm2_path: Path) -> HfBackend:
    """A one-layer Llama (random weights, SmolLM2 tokenizer) for the manual attention check."""
    import transformers

    out = hf_models_dir / "one-layer"
    if not out.exists():
        tok = transformers.AutoTokenizer.from_pretrained(smollm2_path)
        torch.manual_seed(3)
        config = transformers.LlamaConfig(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            initializer_range=0.2,
            pad_token_id=tok.pad_token_id,
            tie_word_embeddings=True,
        )
        transformers.LlamaForCausalLM(config).eval().save_pretrained(out)  # type: ignore[no-untyped-call]
        tok.save_pretrained(out)
    return make_hf(str(out), {"batch_size": 4})


def _request(traj: Trajectory = TRAJ, share: float = 0.0, seed: int = 0) -> ElicitRequest:
    messages, spans = elicit_messages(PROBLEM, traj)
    hide = tuple(spans[s] for s in ("vision", "reasoning") if spans[s][1] > spans[s][0])
    return ElicitRequest(messages, hide=hide if share > 0 else (), share=share, seed=seed)


def _ok(result: Elicited | ElicitFailure) -> Elicited:
    assert isinstance(result, Elicited), result
    return result


class Calls:
    """Counts forward calls of a model."""

    def __init__(self, model: Any) -> None:
        self.n = 0
        self._h = model.register_forward_hook(self._hook)

    def _hook(self, *args: Any) -> None:
        self.n += 1

    def close(self) -> None:
        self._h.remove()


@pytest.fixture
def calls(llama: HfBackend) -> Iterator[Calls]:
    c = Calls(llama.model)
    yield c
    c.close()


def test_numerals_are_tokenized_in_context(llama: HfBackend) -> None:
    req = Request(_request().messages, candidates=NUMERALS, generate=False)
    seqs = candidate_sequences(llama, llama.prompt_text(req), NUMERALS)
    assert all(len(s) == 1 for s in seqs[:10])
    assert len(seqs[10]) == 2
    assert seqs[10][0] == seqs[1][0]  # "10" = "1", "0" in SmolLM2's tokenizer


def test_elicitation_equals_plain_sequence_probabilities(llama: HfBackend, calls: Calls) -> None:
    (res,) = elicit(llama, [_request()])
    r = _ok(res)
    assert calls.n == 1  # one forward pass, "10" included
    req = Request(_request().messages, candidates=NUMERALS, generate=False)
    ids = llama.encode([req]).input_ids
    one, zero = r.numeral_tokens[1][0], r.numeral_tokens[10][1]
    with torch.no_grad():
        logits = llama.model(input_ids=torch.cat([ids, torch.tensor([[one]])], dim=1)).logits[0]
    logp = torch.log_softmax(logits.float(), dim=-1)
    p = logp[-2].exp()
    p_after_one = logp[-1].exp()
    for k in (0, 2, 5, 9):
        assert r.raw[k] == pytest.approx(float(p[r.numeral_tokens[k][0]]), rel=1e-4)
    assert r.raw[10] == pytest.approx(float(p[one] * p_after_one[zero]), rel=1e-4)
    assert r.raw[1] == pytest.approx(float(p[one] * (1 - p_after_one[zero])), rel=1e-4)
    assert r.probs is not None
    assert sum(r.probs) == pytest.approx(1.0)
    assert r.expected == pytest.approx(sum(q * k / 10 for k, q in enumerate(r.probs)))


def test_masking_the_rationale_changes_the_distribution(llama: HfBackend) -> None:
    visible, masked, half = (
        _ok(x) for x in elicit(llama, [_request(), _request(share=1.0), _request(share=0.5)])
    )
    assert visible.probs is not None
    assert masked.probs is not None
    assert masked.hidden_tokens > 20
    assert half.hidden_tokens == round(0.5 * masked.hidden_tokens)
    diff = np.abs(np.array(visible.probs) - np.array(masked.probs)).max()
    assert diff > 1e-3  # the slot attends to the rationale, so hiding it must matter
    assert visible.expected != pytest.approx(masked.expected, abs=1e-6)


def test_masking_keeps_positions_and_batching_does_not_matter(llama: HfBackend) -> None:
    short = Trajectory("x", "y", "1")
    alone = _ok(elicit(llama, [_request(share=1.0)])[0])
    batched = elicit(llama, [_request(short), _request(share=1.0), _request(short, share=1.0)])
    together = _ok(batched[1])
    assert np.allclose(alone.raw, together.raw, rtol=1e-4, atol=1e-9)


def _manual_last_logits(
    backend: HfBackend, ids: list[int], hidden: set[int], queries: list[int]
) -> Any:
    """Logits at ``queries`` of a ONE-layer Llama computed by hand: each query attends to the
    keys at or before it, minus the ``hidden`` positions (removed from K and V entirely);
    every token keeps its position for RoPE."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    m = backend.model
    layer = m.model.layers[0]
    attn = layer.self_attn
    cfg = m.config
    n_heads, n_kv = cfg.num_attention_heads, cfg.num_key_value_heads
    hd = cfg.hidden_size // n_heads
    x = torch.tensor([ids])
    pos = torch.arange(len(ids))[None]
    with torch.no_grad():
        h = m.model.embed_tokens(x)
        normed = layer.input_layernorm(h)
        q = attn.q_proj(normed).view(1, -1, n_heads, hd).transpose(1, 2)
        k = attn.k_proj(normed).view(1, -1, n_kv, hd).transpose(1, 2)
        v = attn.v_proj(normed).view(1, -1, n_kv, hd).transpose(1, 2)
        cos, sin = m.model.rotary_emb(h, pos)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        rep = n_heads // n_kv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        outs = []
        for t in queries:
            keys = [j for j in range(t + 1) if j not in hidden or j == t]
            kk, vv = k[:, :, keys], v[:, :, keys]
            w = torch.softmax((q[:, :, t : t + 1] @ kk.transpose(-1, -2)) / math.sqrt(hd), dim=-1)
            a = (w @ vv).transpose(1, 2).reshape(1, 1, -1)
            r = h[:, t : t + 1] + attn.o_proj(a)
            r = r + layer.mlp(layer.post_attention_layernorm(r))
            outs.append(m.lm_head(m.model.norm(r))[0, 0])
    return torch.stack(outs)


def test_masking_only_removes_attention(one_layer: HfBackend) -> None:
    """The masked read-out equals a hand computation in which the hidden tokens' keys and
    values are dropped from the attention of later positions, positions unchanged."""
    er = _request(share=1.0)
    res = _ok(elicit(one_layer, [er])[0])
    req = Request(er.messages, candidates=NUMERALS, generate=False)
    prompt = one_layer.prompt_text(req)
    offset = len(prompt) - len(er.messages[-1].text)
    ranges = one_layer.hidden_token_ranges(req, [(s + offset, e + offset) for s, e in er.hide])
    hidden = {i for s, e in ranges for i in range(s, e)}
    assert len(hidden) == res.hidden_tokens
    ids = one_layer.encode([req]).input_ids[0].tolist()
    one = res.numeral_tokens[1][0]
    logits = _manual_last_logits(one_layer, [*ids, one], hidden, [len(ids) - 1, len(ids)])
    p_slot = torch.softmax(logits[0].float(), dim=-1)
    p_after = torch.softmax(logits[1].float(), dim=-1)
    zero = res.numeral_tokens[10][1]
    for k in (0, 3, 7, 9):
        assert res.raw[k] == pytest.approx(float(p_slot[res.numeral_tokens[k][0]]), rel=1e-4)
    assert res.raw[10] == pytest.approx(float(p_slot[one] * p_after[zero]), rel=1e-4)
    # and hiding really hid something: with nothing hidden the hand computation differs
    plain = _manual_last_logits(one_layer, [*ids, one], set(), [len(ids) - 1])
    assert not torch.allclose(plain[0], logits[0], atol=1e-4)


class _SplittingInputs:
    """Wraps a backend's input adapter so the tokenizer spells the numerals unexpectedly."""

    def __init__(self, inner: Any, mode: str) -> None:
        self._inner = inner
        self.mode = mode

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def plain_tokens(self, prompt: str) -> tuple[list[int], list[tuple[int, int]]]:
        ids, offs = self._inner.plain_tokens(prompt)
        if prompt[-1:].isdigit():
            if self.mode == "merge":  # the numeral swallows the slot's last token
                return [*ids[:-2], 7777 + int(prompt[-1])], offs[:-1]
            if self.mode == "same":  # every numeral becomes the same unknown token
                return [*ids[:-1], 0], offs
            if self.mode == "branches":  # "10" and "7" both split, along different paths
                d = prompt[-2:] if prompt[-2:] == "10" else prompt[-1]
                if d in ("10", "7"):
                    return [*ids[: -len(d)], 5000 + len(d), 6000 + len(d)], offs
        return ids, offs


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("merge", "merges numeral"),
        ("same", "spells numerals alike"),
        ("branches", "more than one path"),
    ],
)
def test_unexpected_numeral_tokenization_fails_with_its_reason(
    llama: HfBackend, mode: str, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llama, "inputs", _SplittingInputs(llama.inputs, mode))
    (res,) = elicit(llama, [_request()])
    assert isinstance(res, ElicitFailure)
    assert reason in res.reason


def test_bad_inputs_become_records_with_reasons(tiny_llama_path: Path, tmp_path: Path) -> None:
    from clearsight.grounding.config import GroundingConfig
    from clearsight.grounding.plan import plan_elicitations, plan_trajectories
    from clearsight.grounding.problems.problem import Problem
    from clearsight.grounding.specs import ELICIT, TRAJECTORY
    from clearsight.grounding.unit import GroundingUnit, run_unit

    model = f"hf:{tiny_llama_path}"
    cfg = GroundingConfig(model=model, generator=None, n_problems=0, pairs=False, variation=False)
    base = dict(id="g", benchmark="given", question="2 + 2?", gold="4", answer_type="number")
    texts = {
        "noslot": "Observation: two and two.\nReasoning: 2 + 2 = 4.\nAnswer: 4",
        "big": "Observation: two and two.\nReasoning: 2 + 2 = 4.\nAnswer: 4\nConfidence (0-10): 15",
        "empty": "Answer: 4\nConfidence (0-10): 8",
        "fine": "Observation: two and two.\nReasoning: 2 + 2 = 4.\nAnswer: 4\nConfidence (0-10): 9",
    }
    problems = [
        Problem(**{**base, "id": k}, meta={"trajectory": t})  # type: ignore[arg-type]
        for k, t in texts.items()
    ]
    items = plan_trajectories(cfg, problems)
    recs = {r.key: r for r in run_unit(GroundingUnit(TRAJECTORY, model, {}, tuple(items)))}
    by_id = {s.problem.id: recs[s.key] for s in items}
    assert by_id["noslot"].status == "failed"
    assert "no confidence slot" in (by_id["noslot"].error or "")
    assert by_id["big"].status == "failed"
    assert "not a numeral 0..10" in (by_id["big"].error or "")
    assert by_id["fine"].readouts["written_confidence"] == 9
    assert by_id["fine"].readouts["correct"] is True
    own = {k: dict(by_id[k].readouts) for k in ("empty", "fine")}
    plan = plan_elicitations(cfg, problems, own, {})
    out = {r.key: r for r in run_unit(GroundingUnit(ELICIT, model, {}, tuple(plan)))}
    status = {(s.problem.id, s.variant): out[s.key] for s in plan}
    empty_masked = status[("empty", "self/r1.00")]
    assert empty_masked.status == "failed"
    assert "empty rationale" in (empty_masked.error or "")
    assert status[("empty", "self/r0.00")].status == "ok"
    assert all(status[("fine", f"self/r{r:.2f}")].status == "ok" for r in cfg.mask_ratios)


def test_a_small_run_end_to_end(tiny_llama_path: Path, tmp_path: Path) -> None:
    from clearsight.grounding import build_grounding_report
    from clearsight.grounding.config import GroundingConfig
    from clearsight.grounding.protocol import run_grounding
    from clearsight.grounding.specs import ELICIT

    model = f"hf:{tiny_llama_path}"
    cfg = GroundingConfig(
        model=model,
        generator=model,
        judge=model,
        n_problems=8,
        max_new_tokens=6,
        unit_size=16,
        n_boot=200,
        variation_mode="handwritten",
    )
    run = tmp_path / "run"
    first = run_grounding(cfg, run, progress=False)
    assert first.stages[ELICIT].ok > 8 * 4
    again = run_grounding(cfg, run, progress=False)  # resumes: nothing left to do
    assert again.stages[ELICIT].units == 0
    paths, analysis = build_grounding_report(run, n_boot=200)
    assert paths.summary_csv.is_file()
    assert "alt='masking curve'" in paths.html.read_text()
    overall = analysis.overall
    assert math.isfinite(overall["tgs_pair_answer"].interval.estimate)
    assert overall["tgs_pair_answer"].n_items == 8
    assert analysis.variation["answer"].n == 8
    judge = analysis.judge
    assert judge["answer"]["n"] == 8
    assert 0.0 <= judge["answer"]["picked_bad"] <= 1.0
    assert "Judge validation" in paths.summary_md.read_text()


def test_shared_prefix_rows_equal_rows_run_alone(llama: HfBackend, calls: Calls) -> None:
    """Rows of one problem share the conversation prefix (computed once, two calls in all);
    their read-outs equal those of each row run on its own."""
    other = Trajectory("Two boxes of six coins arrive.", "58 + 12 - 21 = 49.", "50")
    reqs = [_request(), _request(share=1.0), _request(share=0.5), _request(other, share=1.0)]
    start = calls.n
    together = [_ok(r) for r in elicit(llama, reqs, batch_size=8)]
    assert calls.n - start == 2
    alone = [_ok(elicit(llama, [r], batch_size=1)[0]) for r in reqs]
    for a, b in zip(together, alone, strict=True):
        assert np.allclose(a.raw, b.raw, rtol=2e-4, atol=1e-10)
        assert a.hidden_tokens == b.hidden_tokens
