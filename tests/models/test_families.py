"""The family quirks table and the rules derived from a config (no model needed), and the mask
pieces that keep a family's own attention pattern under a custom mask."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from clearsight.models.families import FAMILIES, Family, check_loadable, family_of
from clearsight.validate import InputError

VLMS = frozenset({"gemma3", "llava", "qwen2_vl"})


def config(model_type: str, text: dict[str, Any] | None = None, **top: Any) -> Any:
    """A config stand-in: ``get_text_config()`` returns the text part (or the config itself)."""
    inner = SimpleNamespace(**(text or {}))
    outer = SimpleNamespace(model_type=model_type, **top)
    outer.get_text_config = lambda: inner if text is not None else outer
    return outer


def test_a_family_without_a_row_needs_nothing() -> None:
    got = family_of(config("llava", {}, vision_config={}), VLMS)
    assert got == Family(model_type="llava")
    check_loadable(got, "hf:x")  # nothing refused


def test_rows_are_kept_and_config_facts_filled_in() -> None:
    text = {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 512}
    got = family_of(config("gemma3", text, vision_config={}), VLMS)
    assert got.bidirectional_image == FAMILIES["gemma3"].bidirectional_image
    assert got.layer_types == ("sliding_attention", "full_attention")
    assert got.sliding_window == 512
    assert got.masked_scoring is None


def test_one_kind_of_layer_with_a_window_is_all_sliding() -> None:
    """Mistral-style configs name no layer types but set a window on every layer."""
    got = family_of(config("mistral", {"sliding_window": 4096}), VLMS)
    assert (got.layer_types, got.sliding_window) == (("sliding_attention",), 4096)
    plain = family_of(config("llama", {"sliding_window": None}), VLMS)
    assert (plain.layer_types, plain.sliding_window) == (("full_attention",), None)


def test_encoder_decoders_are_refused() -> None:
    got = family_of(config("florence2", {"is_encoder_decoder": True}, vision_config={}), VLMS)
    with pytest.raises(InputError, match=r"hf:f \(florence2\) is refused: an encoder-decoder"):
        check_loadable(got, "hf:f")


def test_a_vlm_that_would_load_text_only_is_refused_unless_asked_for() -> None:
    phi = config("phi4_multimodal", None, vision_config={})
    with pytest.raises(InputError, match=r"drop every image.*kind: text"):
        check_loadable(family_of(phi, VLMS), "hf:p")
    with pytest.raises(InputError, match="drop every image"):
        check_loadable(family_of(phi, VLMS, kind="vlm"), "hf:p")
    check_loadable(family_of(phi, VLMS, kind="text"), "hf:p")  # blind on purpose


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ({"layer_types": ["linear_attention", "full_attention"]}, "linear_attention"),
        ({"layer_types": ["chunked_attention", "full_attention"]}, "chunked_attention"),
        ({"use_bidirectional_attention": "all"}, "attends bidirectionally"),
        ({"use_bidirectional_attention": True}, "attends bidirectionally"),
    ],
)
def test_masks_a_family_cannot_honour_are_refused(text: dict[str, Any], named: str) -> None:
    got = family_of(config("some_new_family", text), VLMS)
    assert got.masked_scoring is not None
    assert named in got.masked_scoring
    assert got.refuse is None  # the rest still runs


def test_a_rows_own_reason_wins() -> None:
    got = family_of(config("paligemma", {}, vision_config={}), VLMS | {"paligemma"})
    assert got.masked_scoring == FAMILIES["paligemma"].masked_scoring


# ---- the mask pieces (torch) -----------------------------------------------------------------


def test_image_blocks_attend_both_ways_within_one_image_only() -> None:
    torch = pytest.importorskip("torch")
    from clearsight.models.hf_mask import with_image_blocks

    #          t  i  i  t  i  i  i  t
    image = torch.tensor([[0, 1, 1, 0, 1, 1, 1, 0]], dtype=torch.bool)
    causal = torch.tril(torch.ones(8, 8, dtype=torch.bool))[None, None]
    got = with_image_blocks(causal, image)[0, 0]
    # within one image: both ways
    assert [bool(got[1, 2]), bool(got[4, 6]), bool(got[5, 6])] == [True, True, True]
    assert not bool(got[1, 4])  # not into a later image
    assert [bool(got[0, 1]), bool(got[3, 4])] == [False, False]  # text stays causal
    assert torch.equal(got & ~causal[0, 0], got ^ causal[0, 0])  # only additions


def test_window_keeps_the_last_keys_of_each_query() -> None:
    torch = pytest.importorskip("torch")
    from clearsight.models.hf_mask import windowed

    full = torch.ones(1, 1, 2, 6, dtype=torch.bool)  # the last 2 of 6 positions as queries
    got = windowed(full, 3)[0, 0]
    # query 4 keeps keys 2..4 (k > 4 - 3); query 5 keeps 3..5 (and the future key here)
    assert got.tolist() == [
        [False, False, True, True, True, True],
        [False, False, False, True, True, True],
    ]
