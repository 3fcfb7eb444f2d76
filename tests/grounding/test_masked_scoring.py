"""Grounding's confidence read-out speaks only the backend protocol's masked scoring
(:class:`~clearsight.models.base.MaskedScorer`): tested here without torch, against the scripted
backend's table of scores — the numeral distribution made of the scores it returns, failures
kept per request, the capability checked before use, and a whole grounding run whose TGS and
masking curve are what the table says."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clearsight.grounding.confidence.elicit import Elicited, ElicitFailure, ElicitRequest, elicit
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.grounding.trajectories.trajectory import elicit_messages, good_trajectory
from clearsight.models import load_backend
from clearsight.models.base import (
    HiddenRequest,
    HiddenScores,
    MaskedScorer,
    RequestFailedError,
    masked_scorer,
)
from clearsight.models.scripted import ScriptedBackend, ScriptedScores
from clearsight.validate import InputError
from fixtures.grounding_runs import masked_script

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = bundled_problems(1)[0]


def _request(share: float) -> ElicitRequest:
    messages, spans = elicit_messages(PROBLEM, good_trajectory(PROBLEM))
    return ElicitRequest(messages, hide=(spans["vision"], spans["reasoning"]), share=share)


def test_the_read_out_is_the_numeral_distribution_of_the_backends_scores() -> None:
    visible = HiddenScores({"1": 0.2, "10": 0.2, "7": 0.1}, {"1": 0.5}, ((16,), (16, 15)), 0, 40)
    rows = [
        ScriptedScores("", visible, share=0.0),
        ScriptedScores("", RequestFailedError("the model broke", 1), share=1.0),
    ]
    backend = ScriptedBackend(name="table", scores=rows)
    got, failed, unmatched = elicit(backend, [_request(0.0), _request(1.0), _request(0.5)])
    assert isinstance(got, Elicited)
    # p("1") = 0.2 x p(end | "1") = 0.1; "10" and "7" as scored; renormalised over 0.4
    assert got.raw[1] == pytest.approx(0.1)
    assert got.raw[10] == pytest.approx(0.2)
    assert got.raw[7] == pytest.approx(0.1)
    assert got.mass == pytest.approx(0.4)
    assert got.expected == pytest.approx((0.1 * 0.1 + 0.1 * 0.7 + 0.2 * 1.0) / 0.4)
    assert got.numeral_tokens == ((16,), (16, 15))
    assert got.prompt_tokens == 40
    assert failed == ElicitFailure("the model broke")
    assert isinstance(unmatched, ElicitFailure)
    assert "no scripted scores" in unmatched.reason


def test_unreadable_scores_fail_their_request_with_the_reason() -> None:
    """A probability above 1, or a prefix numeral scored without its end probability, is the
    model's output that cannot be read: that request fails, saying why."""
    rows = [
        ScriptedScores("", HiddenScores({"7": 1.5}, {}), share=0.0),
        ScriptedScores("", HiddenScores({"1": 0.5}, {}), share=1.0),
    ]
    above, no_end = elicit(ScriptedBackend(scores=rows), [_request(0.0), _request(1.0)])
    assert isinstance(above, ElicitFailure)
    assert above.reason.startswith("unreadable output of the model: ")
    assert "in [0, 1]" in above.reason
    assert isinstance(no_end, ElicitFailure)
    assert "end_probs['1']" in no_end.reason


def test_the_table_answers_by_text_ranges_and_share(tmp_path: Path) -> None:
    hide = _request(1.0).hide
    script = tmp_path / "m.jsonl"
    entries = [
        {"match": "nowhere", "hidden": {"sequence_probs": {"0": 1.0}}},
        {"match": PROBLEM.question, "hidden": {"hide": hide, "share": 1.0, "failed": "no"}},
        {"hidden": {"sequence_probs": {"5": 1.0}, "hidden_tokens": 3}},
    ]
    script.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    backend = load_backend(f"scripted:{script}", {})
    assert backend.capabilities.attention_mask
    assert isinstance(backend, MaskedScorer)
    scorer = masked_scorer(backend, "a test")
    full, other_ranges = scorer.score_hidden(
        [_request(1.0).hidden, HiddenRequest(_request(1.0).messages, ("5",), hide=((0, 3),))]
    )
    assert isinstance(full, RequestFailedError)
    assert full.reason == "no"
    assert isinstance(other_ranges, HiddenScores)
    assert other_ranges.sequence_probs == {"5": 1.0}
    assert other_ranges.hidden_tokens == 3


@pytest.mark.parametrize(
    ("hidden", "says"),
    [
        ([1, 2], "invalid hidden"),
        ({"hide": [[0, "9"]], "sequence_probs": {}}, "invalid hide"),
        ({"share": 2, "sequence_probs": {}}, "invalid share"),
        ({"share": 1.0}, "invalid sequence_probs"),
        ({"sequence_probs": {}, "hidden_tokens": 1.5}, "invalid hidden_tokens"),
    ],
)
def test_a_bad_table_row_is_refused_naming_the_field(
    tmp_path: Path, hidden: object, says: str
) -> None:
    script = tmp_path / "bad.jsonl"
    script.write_text(json.dumps({"hidden": hidden}) + "\n")
    with pytest.raises(InputError, match=says):
        load_backend(f"scripted:{script}", {})


def test_a_backend_without_masked_scoring_is_refused_before_use(tmp_path: Path) -> None:
    script = tmp_path / "plain.jsonl"
    script.write_text(json.dumps({"texts": ["hi"]}) + "\n")
    plain = load_backend(f"scripted:{script}", {})
    assert not plain.capabilities.attention_mask
    with pytest.raises(InputError, match="cannot be used for grounding: it lacks attention_mask"):
        masked_scorer(plain, "grounding")


@pytest.mark.slow
def test_a_grounding_run_reads_masked_scores_without_torch(tmp_path: Path) -> None:
    """A whole run (own trajectories, rule-made pairs, hand-written variation, hesitation,
    the masking curve) on a scripted model, in a fresh interpreter: its TGS-self is 0.9 - 0.3,
    its masking curve what the table says, its pairs 0 — and torch never imported."""
    script = masked_script(tmp_path)
    code = textwrap.dedent(
        f"""
        import json, sys
        from pathlib import Path
        from clearsight.grounding import GroundingConfig, run_grounding
        from clearsight.grounding import analyse_grounding

        model = "scripted:{script}"
        cfg = GroundingConfig(
            model=model, generator=None, n_problems=3, variation_mode="handwritten", n_boot=100
        )
        summary = run_grounding(cfg, Path({str(tmp_path / "run")!r}), progress=False)
        a = analyse_grounding(Path({str(tmp_path / "run")!r}), n_boot=100, seed=0)
        print(json.dumps({{
            "failed": summary.failed,
            "tgs_self": a.overall["tgs_self"].interval.estimate,
            "tgs_pair": a.overall["tgs_pair"].interval.estimate,
            "curve": [p.interval.estimate for p in a.curve.values()],
            "torch": "torch" in sys.modules,
        }}))
        """
    )
    env = {"PYTHONPATH": f"{ROOT / 'src'}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["failed"] == 0
    assert got["tgs_self"] == pytest.approx(0.6)
    assert got["tgs_pair"] == pytest.approx(0.0)
    assert got["curve"] == pytest.approx([0.9, 0.6, 0.6, 0.6, 0.3])
    assert got["torch"] is False
