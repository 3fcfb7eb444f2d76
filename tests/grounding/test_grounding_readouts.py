"""Calibration read-outs of trajectory grounding: the data file, each method's aggregate on
hand-made values, failures recorded not guessed, one forward pass per slot on a tiny model, and
the Table-2 comparison of a small run. (Named apart from ``tests/sweep/test_readouts.py``: the
suite imports test modules by their basename.)"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("torch")

from test_grounding_model import Calls, one_thread  # noqa: F401  (one thread: faster)

from clearsight.grounding.confidence.elicit import Elicited, ElicitFailure, elicit
from clearsight.grounding.confidence.methods import (
    aggregate,
    bundled_readouts,
    combine,
    get_readout,
    harmonic_mean,
    parse_readouts,
    readout_requests,
    slot_messages,
    steerconf_confidence,
)
from clearsight.grounding.confidence.numerals import numeral_distribution
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.grounding.trajectories.trajectory import elicit_messages, good_trajectory
from clearsight.models.hf import make_hf
from clearsight.validate import InputError

TOL = 1e-9
PROBLEM = bundled_problems(1)[0]
GOOD = good_trajectory(PROBLEM)


def _elicited(probs: list[float] | None, expected: float | None, mass: float) -> Elicited:
    return Elicited(tuple(probs or ()), mass, None if probs is None else tuple(probs), expected,
                    (), 0, 10)  # fmt: skip


def test_the_six_readouts_are_bundled_with_their_slots() -> None:
    r = bundled_readouts()
    assert list(r) == ["verbalize", "ptrue", "steerconf", "conftuner", "rlcr", "vlcal"]
    assert [len(x.slots) for x in r.values()] == [1, 1, 5, 1, 1, 2]
    assert r["conftuner"].slots[0].candidates == tuple("0123456789")
    assert r["conftuner"].slots[0].values[9] == pytest.approx(1.0, abs=TOL)
    assert r["ptrue"].slots[0].candidates == (" True", " False")
    assert all(s.system for s in r["steerconf"].slots)
    assert "VL-Calibration" in r["vlcal"].checkpoint
    with pytest.raises(InputError, match="unknown read-out 'nope'"):
        get_readout("nope")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("readouts: {a: {method: m, checkpoint: c, aggregate: mean, slots: []}}", "aggregate"),
        (
            "readouts: {a: {method: m, checkpoint: c, aggregate: single, "
            "slots: [{name: s, tail: t, scale: '1-5'}]}}",
            "unknown scale",
        ),
        (
            "readouts: {a: {method: m, checkpoint: c, aggregate: harmonic, "
            "slots: [{name: s, tail: t, scale: '0-10'}]}}",
            "two slots",
        ),
        (
            "readouts: {a: {method: m, checkpoint: c, aggregate: single, "
            "slots: [{name: s, tail: t, candidates: [x, y], values: [1]}]}}",
            "each with a value",
        ),
    ],
)
def test_a_malformed_readout_file_is_refused(doc: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_readouts(doc)


def test_verbalize_is_the_template_conversation_character_for_character() -> None:
    slot = get_readout("verbalize").slots[0]
    assert slot_messages(PROBLEM, GOOD, slot) == elicit_messages(PROBLEM, GOOD)


def test_every_slot_keeps_the_rationale_spans_and_quotes_the_answer() -> None:
    _, base = elicit_messages(PROBLEM, GOOD)
    for r in bundled_readouts().values():
        for slot in r.slots:
            messages, spans = slot_messages(PROBLEM, GOOD, slot)
            text = messages[-1].text
            assert spans["vision"] == base["vision"]
            assert spans["reasoning"] == base["reasoning"]
            assert text[slice(*spans["answer"])] == GOOD.answer.strip()
            assert (messages[0].role == "system") == (slot.system is not None)
    rlcr = slot_messages(PROBLEM, GOOD, get_readout("rlcr").slots[0])[0][-1].text
    assert rlcr.endswith(f"<answer>{GOOD.answer.strip()}</answer>\n<confidence>")


def test_steerconf_aggregate_of_given_prompt_confidences() -> None:
    # mu = 0.4, sigma = sqrt(0.08 / 3), c = mu / (1 + sigma / mu)
    sigma = math.sqrt(0.08 / 3)
    assert steerconf_confidence([0.2, 0.4, 0.6]) == pytest.approx(0.4 / (1 + sigma / 0.4))
    assert steerconf_confidence([0.7] * 5) == pytest.approx(0.7, abs=TOL)  # consistent: mu
    assert steerconf_confidence([0.0, 0.0]) == 0.0
    assert steerconf_confidence([0.5, 0.5], answer_consistency=0.6) == pytest.approx(0.3)
    with pytest.raises(InputError):
        steerconf_confidence([])


def test_harmonic_mean_and_the_aggregates() -> None:
    assert harmonic_mean(0.5, 1.0) == pytest.approx(2 / 3)
    assert harmonic_mean(0.0, 0.8) == 0.0
    assert harmonic_mean(0.0, 0.0) == 0.0
    assert aggregate(get_readout("vlcal"), [0.6, 0.3]) == pytest.approx(0.4)
    assert aggregate(get_readout("ptrue"), [0.75]) == pytest.approx(0.75, abs=TOL)
    with pytest.raises(InputError, match="confidences"):
        aggregate(get_readout("vlcal"), [0.6])


def test_ptrue_conftuner_and_rlcr_distributions_from_given_probabilities() -> None:
    pt = get_readout("ptrue").slots[0]
    r = numeral_distribution({" True": 0.3, " False": 0.1}, None, pt.candidates, pt.values)
    assert r.expected == pytest.approx(0.75)
    assert r.mass == pytest.approx(0.4)
    ct = get_readout("conftuner").slots[0]
    r = numeral_distribution({"9": 0.5, "0": 0.25}, None, ct.candidates, ct.values)
    assert r.expected == pytest.approx(2 / 3)  # 9/9 with 2/3 of the mass
    assert r.mass == pytest.approx(0.75)  # ConfTuner's coverage
    rl = get_readout("rlcr").slots[0]
    # "0" needs p(end | "0"): without it "0" would hold the mass of "0.7"
    r = numeral_distribution({"0": 0.5, "0.7": 0.2, "1": 0.1}, {"0": 0.6}, rl.candidates, rl.values)
    assert r.raw[0] == pytest.approx(0.3)
    assert r.expected == pytest.approx((0.2 * 0.7 + 0.1) / 0.6)
    with pytest.raises(InputError, match="prefix"):
        numeral_distribution({"0": 0.5}, None, rl.candidates, rl.values)


def test_combine_keeps_every_slot_raw_and_coverage() -> None:
    vl = get_readout("vlcal")
    a = _elicited([0.0] * 10 + [1.0], 1.0, 0.9)
    b = _elicited([0.5] * 2 + [0.0] * 9, 0.05, 0.5)
    res = combine(vl, [a, b])
    assert not isinstance(res, str)
    assert res.confidence == pytest.approx(harmonic_mean(1.0, 0.05))
    assert res.confidences == {"vision": 1.0, "reasoning": 0.05}
    assert res.distributions["reasoning"][:2] == [0.5, 0.5]
    assert res.coverage == pytest.approx(0.7)
    stored = res.to_readouts()
    assert stored["readout"] == "vlcal"
    assert stored["expected"] == pytest.approx(res.confidence, abs=TOL)
    assert stored["mass"] == pytest.approx(0.9, abs=TOL)


def test_unparsed_outputs_are_recorded_not_guessed() -> None:
    vl = get_readout("vlcal")
    ok = _elicited([1.0] + [0.0] * 10, 0.0, 0.2)
    empty = _elicited(None, None, 0.0)
    assert combine(vl, [ok, empty]) == "vlcal slot reasoning: no probability mass on any candidate"
    failed = combine(vl, [ElicitFailure("the tokenizer merges"), ok])
    assert failed == "skipped: vlcal slot vision: the tokenizer merges"


def test_every_readout_runs_one_forward_pass_per_slot(tiny_llama_path: Path) -> None:
    backend = make_hf(str(tiny_llama_path), {"batch_size": 8})
    calls = Calls(backend.model)
    for r in bundled_readouts().values():
        reqs = readout_requests(r, PROBLEM, GOOD, 0.0, 0)
        start = calls.n
        got = elicit(backend, reqs, batch_size=1)
        assert calls.n - start == len(r.slots), r.name
        res = combine(r, got)
        assert not isinstance(res, str), res
        assert 0.0 <= res.confidence <= 1.0
        assert all(math.isclose(sum(p), 1.0, abs_tol=1e-9) for p in res.distributions.values())
        masked = combine(r, elicit(backend, readout_requests(r, PROBLEM, GOOD, 1.0, 0)))
        assert not isinstance(masked, str)
        assert masked.distributions != res.distributions  # masking reaches every read-out


def test_a_run_compares_the_readouts_side_by_side(tiny_llama_path: Path, tmp_path: Path) -> None:
    from clearsight.grounding import build_grounding_report
    from clearsight.grounding.config import GroundingConfig
    from clearsight.grounding.page.tables import readouts_frame
    from clearsight.grounding.protocol import run_grounding
    from clearsight.grounding.results import load_grounding_results
    from clearsight.grounding.specs import ELICIT
    from clearsight.grounding.tgs import scores

    model = f"hf:{tiny_llama_path}"
    cfg = GroundingConfig(
        model=model,
        generator=None,
        n_problems=3,
        max_new_tokens=8,
        variation_mode="handwritten",
        hesitation=False,
        readouts=("verbalize", "ptrue", "vlcal"),
        n_boot=100,
    )
    first = run_grounding(cfg, tmp_path / "run", progress=False)
    per_readout = len(cfg.mask_ratios) + 1 + 3 + 3  # self, good, 3 bad sides (rule), 3 alts
    assert first.stages[ELICIT].ok + first.stages[ELICIT].failed == 3 * per_readout * 3
    paths, analysis = build_grounding_report(tmp_path / "run", n_boot=100)
    assert analysis.readout == "verbalize"
    table = analysis.readouts
    assert list(table) == ["verbalize", "ptrue", "vlcal"]
    own, main = table["verbalize"].scores["tgs_self"], analysis.overall["tgs_self"]
    assert own.n_items == main.n_items
    got = (own.interval.estimate, own.interval.low, own.interval.high)
    assert got == pytest.approx((main.interval.estimate, main.interval.low, main.interval.high))
    assert all(math.isfinite(t.scores["tgs_pair"].interval.estimate) for t in table.values())
    assert all(t.coverage is not None and 0.0 < t.coverage <= 1.0 for t in table.values())
    assert "Methods side by side (Table 2)" in paths.summary_md.read_text()
    # issue 46 item 4: vlcal's TGS is the holistic confidence's (verbalize's rows of the run),
    # its ECE the harmonic mean's; the rows name model x method with its provenance
    vlcal, holistic = table["vlcal"].scores, table["verbalize"].scores
    for key in ("tgs_self", "tgs_pair", "tgs_pair_answer"):
        v, h = vlcal[key].interval, holistic[key].interval
        assert (v.estimate, v.low, v.high) == pytest.approx((h.estimate, h.low, h.high))
    elic = load_grounding_results(tmp_path / "run").elicitations
    harmonic = scores(elic[elic["readout"] == "vlcal"], None, n_boot=100)["tgs_self"]
    assert harmonic.interval.estimate != pytest.approx(vlcal["tgs_self"].interval.estimate)
    assert vlcal["ECE"].interval.estimate != pytest.approx(holistic["ECE"].interval.estimate)
    assert list(readouts_frame(analysis)["method"]) == [
        f"{model} × verbalize (prompting)",
        f"{model} × ptrue (prompting)",
        f"{model} × vlcal (prompt format)",
    ]
    with pytest.raises(ValueError, match="unknown read-out"):
        GroundingConfig(readouts=("verbalize", "nope"))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--readout", "ptrue", "--readouts", "ptrue,vlcal"], "not both"),
        (["--readouts", "verbalize,nope"], "unknown read-out 'nope'"),
        (["--variation-mode", "random"], "'sampled' or 'handwritten' (got 'random')"),
    ],
)
def test_bad_readout_flags_stop_before_the_run_exists(
    flags: list[str], message: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["grounding", "--n", "1", *flags, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not out.exists()


def test_a_trained_methods_readout_is_its_checkpoint_only_on_that_checkpoint() -> None:
    from clearsight.grounding.confidence.readout_table import provenance
    from clearsight.grounding.trajectories.templates import native_template

    vlcal_model = native_template("hf:/data/vlc", {"preset": "vl-calibration-4b"}).name
    assert provenance("vlcal", vlcal_model) == "checkpoint"
    assert provenance("vlcal", native_template("hf:/data/q", {"preset": "qwen3-vl-4b"}).name) == (
        "prompt format"
    )
    assert provenance("conftuner", vlcal_model) == "prompt format"
    assert provenance("rlcr", "think") == "prompt format"
    assert provenance("verbalize", "think") == "prompting"
