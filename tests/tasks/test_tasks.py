"""Tests of clearsight.tasks: templates, identification and verification questions, prior matching.

The statistical tests compare simulated draws with an independent exact enumeration of the
proportional-without-replacement (successive) draw, and with the exact properties of the
exchangeable design (distractor share = prior, prior guesser = chance).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import pickle
from collections import Counter
from collections.abc import Mapping

import numpy as np
import pytest

from clearsight.scenes.categories import CATEGORY_NAMES, SUPERCATEGORY
from clearsight.tasks import (
    ABSTAIN_TEMPLATES,
    VERBALIZED_WORDINGS,
    DistractorScheme,
    Question,
    Template,
    category_prior,
    draw_distractors,
    get_template,
    identification_question,
    load_templates,
    verbalized_prompt,
    verbalized_question,
    verification_questions,
)
from clearsight.tasks.prior import cps_inclusion, cps_joint_inclusion
from clearsight.tasks.templates import content_hash, parse_templates
from clearsight.validate import InputError

#: A skewed prior over 8 vehicle/outdoor categories (max 0.24 <= 1/4, so both schemes apply).
SKEWED: dict[str, float] = {
    "car": 0.24,
    "truck": 0.20,
    "bus": 0.16,
    "bicycle": 0.12,
    "motorcycle": 0.10,
    "boat": 0.08,
    "traffic light": 0.06,
    "bench": 0.04,
}
REASON = "The boxed object is not visible clearly enough to identify"
GENERIC = "I don't know"
N_DRAWS = 20_000

#: The published templates and their content hashes. A failure here means a shipped template
#: was edited in place: restore it and add the new wording under a new id and version instead.
PUBLISHED = {
    "abstain.generic.v1": "02dbeac75031f354eeb69da301091fcb6e2798cea38b5aee0bb38ca835172b19",
    "abstain.reason.v1": "104c5ba546097523cef6222ef9052cb70b7fae43e8c434a2d86e9acf5bf084ff",
    "answer.letter.v1": "e342226abaa0e6916d3070fc76d5697b8266e8ab83f23edb064823bd47d2464a",
    "t2.identify.v1": "a3a01518f5f31fd7eaa96df5b4ac8cc69e5fca0997d92e830c1c0ba7cf328f5f",
    "t3.verify.v1": "2c7e9f498f97883be5eb5bf45d3ee0993cb13321e09c93b7e63af9a6c068a361",
    "verbal.percent.v1": "8b5a5a524adf5fa2f0de2b2976b6d54309d498c034816dc2ab3cf9cfd0c64d30",
    "verbal.plain.v1": "e4bf3f4f6d4743669317a698991c2df5a31fd88923de83df016d010149729246",
    "verbal.scale.v1": "5524063570b91b692b6ee18e4de6132372ad94a1ed2ce5597e3a26c2b3b11b4f",
}


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------------------------
# Independent reference: exact enumeration of the successive (proportional) draw.


def successive_probabilities(
    true: str, prior: Mapping[str, float], n: int
) -> dict[tuple[str, ...], float]:
    """P(ordered distractor tuple | true) for proportional draws without replacement."""
    others = [c for c in prior if c != true]
    out: dict[tuple[str, ...], float] = {}
    for seq in itertools.permutations(others, n):
        left, prob = 1.0 - prior[true], 1.0
        for d in seq:
            prob *= prior[d] / left
            left -= prior[d]
        out[seq] = prob
    return out


def exact_proportional(prior: Mapping[str, float]) -> tuple[dict[str, float], float]:
    """Expected share of distractor slots per category, and the prior guesser's accuracy.

    True categories follow the prior; the guesser picks the option with the highest prior.
    """
    share = dict.fromkeys(prior, 0.0)
    guesser = 0.0
    for true, p_true in prior.items():
        for seq, prob in successive_probabilities(true, prior, 3).items():
            weight = p_true * prob
            for d in seq:
                share[d] += weight / 3
            if max((true, *seq), key=prior.__getitem__) == true:
                guesser += weight
    return share, guesser


def simulate(prior: Mapping[str, float], scheme: DistractorScheme, seed: int) -> dict[str, object]:
    """Draw N_DRAWS identification questions with true categories from the prior."""
    g = rng(seed)
    names = list(prior)
    p = np.array([prior[c] for c in names])
    slots: Counter[str] = Counter()
    hits = 0
    for true_index in g.choice(len(names), size=N_DRAWS, p=p):
        true = names[int(true_index)]
        q = identification_question(true, prior, g, scheme=scheme)
        slots.update(o for o in q.options if o != true)
        guess = max(q.answer_letters, key=lambda letter: prior[q.option_for(letter)])
        hits += guess == q.correct
    share = {c: slots[c] / (3 * N_DRAWS) for c in names}
    return {"share": share, "guesser": hits / N_DRAWS}


@pytest.fixture(scope="module")
def proportional_run() -> dict[str, object]:
    return simulate(SKEWED, "proportional", seed=11)


@pytest.fixture(scope="module")
def exchangeable_run() -> dict[str, object]:
    return simulate(SKEWED, "exchangeable", seed=12)


def binomial_sd(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


# --------------------------------------------------------------------------------------------
# Templates


def test_shipped_template_ids_kinds_and_published_hashes() -> None:
    templates = load_templates()
    assert set(templates) == set(PUBLISHED)
    kinds = Counter(t.kind for t in templates.values())
    assert kinds == {"identify": 1, "verify": 1, "instruction": 1, "abstain": 2, "verbalized": 3}
    for tid, t in templates.items():
        assert t.id == tid
        assert t.id.endswith(f".v{t.version}")
        assert len(t.sha256) == 64
        assert t.sha256 == content_hash(t.id, t.version, t.kind, t.text, t.options)
        assert t.sha256 == PUBLISHED[tid], f"{tid} was edited in place"


def test_hashes_are_stable_across_loads() -> None:
    first = {tid: t.sha256 for tid, t in load_templates().items()}
    load_templates.cache_clear()
    second = {tid: t.sha256 for tid, t in load_templates().items()}
    assert first == second
    assert load_templates() is load_templates()  # cached


def test_hash_changes_with_any_content_change() -> None:
    t = get_template("t2.identify.v1")
    same = Template(id=t.id, version=t.version, kind=t.kind, text=t.text)
    assert same.sha256 == t.sha256
    assert same == t
    edits = [
        dataclasses.replace(t, text=t.text + " "),
        dataclasses.replace(t, text=t.text.replace("red box", "red frame")),
        dataclasses.replace(t, id="t2.identify.v2", version=2),
        dataclasses.replace(get_template("t3.verify.v1"), options=("No", "Yes")),
    ]
    hashes = {e.sha256 for e in edits} | {t.sha256, get_template("t3.verify.v1").sha256}
    assert len(hashes) == len(edits) + 2


def test_hash_ignores_yaml_layout_but_not_content() -> None:
    block = (
        "templates:\n  - id: x.abstain.v1\n    version: 1\n    kind: abstain\n"
        "    text: |-\n      Cannot tell\n"
    )
    flow = (
        "# a comment\n"
        'templates: [{kind: abstain, text: "Cannot tell", version: 1, id: x.abstain.v1}]\n'
    )
    other = flow.replace("Cannot tell", "Cannot tell.")
    (a,), (b,), (c,) = parse_templates(block), parse_templates(flow), parse_templates(other)
    assert a.sha256 == b.sha256
    assert c.sha256 != a.sha256


def test_abstain_and_instruction_texts_are_exact() -> None:
    assert get_template(ABSTAIN_TEMPLATES["reason"]).text == REASON
    assert get_template(ABSTAIN_TEMPLATES["generic"]).text == GENERIC
    assert get_template("answer.letter.v1").text == "Answer with the letter only."
    assert get_template("t3.verify.v1").options == ("Yes", "No")


def test_verbalized_wordings_are_distinct_and_share_one_reply_format() -> None:
    texts = [get_template(w, "verbalized").text for w in VERBALIZED_WORDINGS]
    assert len(set(texts)) == 3
    for text in texts:
        assert text.endswith("Answer: <letter>\nConfidence: <number from 0 to 100>")
        first = text.splitlines()[0]
        assert ("0 to 100" in first) or ("percent" in first)


def test_unknown_template_id_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"unknown template id 't9\.nope\.v1'.*t2\.identify\.v1"):
        get_template("t9.nope.v1")
    with pytest.raises(InputError, match="is a 'verify' template"):
        get_template("t3.verify.v1", "identify")
    with pytest.raises(InputError, match="unknown template id"):
        identification_question("car", SKEWED, rng(), template_id="t2.identify.v9")
    with pytest.raises(InputError, match="'identify' template"):
        verification_questions("car", SKEWED, rng(), template_id="t2.identify.v1")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"text": "Which is it? {options}"}, "placeholders"),
        ({"text": "Which? {options} {instruction} {extra}"}, "placeholders"),
        ({"id": "t2.identify.v2"}, r"must end in '\.v1'"),
        ({"version": 0}, "version"),
        ({"kind": "essay"}, "kind"),
        ({"options": ("Yes", "No")}, "options"),
        ({"text": "Which? {0} {options} {instruction}"}, "plain name"),
    ],
)
def test_invalid_templates_are_rejected(fields: dict[str, object], message: str) -> None:
    base: dict[str, object] = {
        "id": "t2.identify.v1",
        "version": 1,
        "kind": "identify",
        "text": "Which? {options} {instruction}",
    }
    with pytest.raises(InputError, match=message):
        Template(**{**base, **fields})  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Prior


def test_category_prior_counts_frequencies_in_coco_order() -> None:
    prior = category_prior(["truck", "car", "car", "bus", "car", "bench", "truck", "car"])
    assert prior == {"car": 0.5, "bus": 0.125, "truck": 0.25, "bench": 0.125}
    assert list(prior) == ["car", "bus", "truck", "bench"]  # COCO ids 3, 6, 8, 15
    assert math.fsum(prior.values()) == 1.0


@pytest.mark.parametrize(
    ("categories", "message"),
    [([], "empty"), (["car", "unicorn"], "unicorn"), ("car", "not one string")],
)
def test_category_prior_rejects_bad_input(categories: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        category_prior(categories)  # type: ignore[arg-type]


def test_prior_order_does_not_change_the_question() -> None:
    reversed_prior = dict(reversed(SKEWED.items()))
    counts = {c: 100 * v for c, v in SKEWED.items()}  # counts work as well as shares
    a = identification_question("bus", SKEWED, rng(5))
    assert identification_question("bus", reversed_prior, rng(5)) == a
    assert identification_question("bus", counts, rng(5)).options == a.options


# --------------------------------------------------------------------------------------------
# Identification


def test_identification_is_deterministic_bit_for_bit() -> None:
    a = identification_question("bus", SKEWED, rng(7), abstain="reason")
    b = identification_question("bus", SKEWED, rng(7), abstain="reason")
    assert a == b
    assert pickle.dumps(a) == pickle.dumps(b)
    assert pickle.loads(pickle.dumps(a)) == a


def test_option_orders_differ_across_seeds_and_the_correct_letter_is_uniform() -> None:
    questions = [identification_question("bus", SKEWED, rng(s)) for s in range(2000)]
    orders = {q.options for q in questions[:50]}
    assert len(orders) > 40
    correct = Counter(q.correct for q in questions)
    assert set(correct) == {"A", "B", "C", "D"}
    for letter in "ABCD":  # 0.25 +- 4.5 sd of a binomial share over 2000
        assert abs(correct[letter] / 2000 - 0.25) < 4.5 * binomial_sd(0.25, 2000)


def test_identification_question_content() -> None:
    for seed in range(200):
        q = identification_question("truck", SKEWED, rng(seed))
        assert q.task == "identify"
        assert q.readout == "letter"
        assert q.letters == ("A", "B", "C", "D")
        assert q.answer_letters == q.letters
        assert q.abstain is None
        assert q.abstain_template is None
        assert q.chance == 0.25
        assert q.option_for(q.correct) == "truck" == q.true_category
        assert len(set(q.options)) == 4
        assert set(q.options) <= set(SKEWED)
        assert q.options.count("truck") == 1
        assert q.asked_category is None
        assert q.asked_is_true is None
        assert "E." not in q.prompt
    lines = q.prompt.split("\n")
    assert lines[0] == "Which of these names the object in the red box?"
    assert lines[1:5] == [f"{letter}. {o}" for letter, o in zip("ABCD", q.options, strict=True)]
    assert lines[5] == "Answer with the letter only."
    assert len(lines) == 6
    assert [r.id for r in q.templates] == ["t2.identify.v1", "answer.letter.v1"]
    assert [r.sha256 for r in q.templates] == [get_template(r.id).sha256 for r in q.templates]


@pytest.mark.parametrize(("wording", "text"), [("reason", REASON), ("generic", GENERIC)])
def test_abstain_option_is_e_and_last(wording: str, text: str) -> None:
    plain = identification_question("bus", SKEWED, rng(3))
    q = identification_question("bus", SKEWED, rng(3), abstain=wording)  # type: ignore[arg-type]
    assert q.letters == ("A", "B", "C", "D", "E")
    assert q.answer_letters == ("A", "B", "C", "D")
    assert q.abstain == "E"
    assert q.options[-1] == text
    assert q.options[:4] == plain.options
    assert q.correct == plain.correct
    assert q.chance == 0.25
    lines = q.prompt.split("\n")
    assert lines[5] == f"E. {text}"
    assert lines[6] == "Answer with the letter only."
    assert q.abstain_template is not None
    assert q.abstain_template.id == ABSTAIN_TEMPLATES[wording]  # type: ignore[index]
    assert q.templates[-1] == q.abstain_template


def test_too_few_categories_fill_from_the_super_category_then_any() -> None:
    for seed in range(100):
        only_car = identification_question("car", {"car": 1.0}, rng(seed))
        distractors = set(only_car.options) - {"car"}
        assert len(distractors) == 3
        assert {SUPERCATEGORY[c] for c in distractors} == {"vehicle"}
        two = identification_question("car", {"car": 3, "bench": 1}, rng(seed))
        assert "bench" in two.options  # every prior category is used first
        assert {SUPERCATEGORY[c] for c in set(two.options) - {"car", "bench"}} == {"vehicle"}
        person = identification_question("person", {"person": 1}, rng(seed))  # no siblings
        assert len(set(person.options)) == 4
        assert person.options.count("person") == 1
        assert set(person.options) <= set(CATEGORY_NAMES)
    # "stop sign" has 4 outdoor siblings: fillers are drawn uniformly among them
    fillers = Counter(
        d for s in range(4000) for d in draw_distractors("stop sign", {"stop sign": 1}, 3, rng(s))
    )
    assert set(fillers) == {"traffic light", "fire hydrant", "parking meter", "bench"}
    for c in fillers:  # each is in 3 of 4 draws
        assert abs(fillers[c] / 4000 - 0.75) < 4.5 * binomial_sd(0.75, 4000)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"true_category": "unicorn"}, "unicorn"),
        ({"true_category": "Car"}, "'Car' is not a COCO category"),
        ({"prior": {}}, "prior is empty"),
        ({"prior": {"car": 1, "dragon": 1}}, "dragon"),
        ({"prior": {"car": 1, "bus": 0}}, "> 0"),
        ({"prior": {"car": 1, "bus": -1}}, "> 0"),
        ({"prior": {"car": 1, "bus": float("nan")}}, "finite"),
        ({"prior": {"bus": 1, "truck": 1}}, "true category 'car' is not in the prior"),
        ({"rng": 0}, "numpy.random.Generator"),
        ({"rng": np.random.RandomState(0)}, "numpy.random.Generator"),
        ({"abstain": "maybe"}, "abstain must be None or one of"),
        ({"scheme": "uniform"}, "scheme must be one of"),
    ],
)
def test_identification_rejects_bad_input(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"true_category": "car", "prior": SKEWED, "rng": rng()}
    args.update(kwargs)
    with pytest.raises(InputError, match=message):
        identification_question(**args)  # type: ignore[arg-type]


def test_exchangeable_scheme_needs_every_prior_at_most_a_quarter() -> None:
    with pytest.raises(InputError, match=r"prior <= 1/4.*'car' has 0\.5"):
        identification_question(
            "bus", {"car": 2, "bus": 1, "truck": 1}, rng(), scheme="exchangeable"
        )
    with pytest.raises(InputError, match="1/4"):
        identification_question("car", {"car": 1}, rng(), scheme="exchangeable")
    # exactly 1/4 each: the option set is forced and every order is still shuffled
    four = {"car": 1, "bus": 1, "truck": 1, "boat": 1}
    q = identification_question("bus", four, rng(), scheme="exchangeable")
    assert set(q.options) == set(four)


# --------------------------------------------------------------------------------------------
# Prior matching, statistically (N_DRAWS questions, true categories drawn from the prior)


def test_reference_enumeration_sums_to_one() -> None:
    for true in SKEWED:
        assert math.isclose(math.fsum(successive_probabilities(true, SKEWED, 3).values()), 1.0)
    share, _ = exact_proportional(SKEWED)
    assert math.isclose(math.fsum(share.values()), 1.0)


def test_conditional_distractor_draw_matches_the_enumeration() -> None:
    """Given the true category, each distractor's inclusion rate is the exact successive one."""
    exact = Counter[str]()
    for seq, prob in successive_probabilities("car", SKEWED, 3).items():
        for d in seq:
            exact[d] += prob  # type: ignore[assignment]
    g, n = rng(99), 10_000
    seen = Counter(d for _ in range(n) for d in draw_distractors("car", SKEWED, 3, g))
    assert "car" not in seen
    for c, p in exact.items():
        assert abs(seen[c] / n - p) < 4.5 * binomial_sd(p, n), c


@pytest.mark.slow
def test_proportional_distractor_shares_match_the_exact_expectation(
    proportional_run: dict[str, object],
) -> None:
    share = proportional_run["share"]
    assert isinstance(share, dict)
    expected, _ = exact_proportional(SKEWED)
    for c, p in expected.items():
        assert abs(share[c] - p) < 5 * binomial_sd(p, 3 * N_DRAWS), (c, share[c], p)
    # a frequent category fills fewer distractor slots than its prior share (it is often the
    # true answer), a rare one more: successive sampling does not reproduce the prior exactly
    assert expected["car"] < SKEWED["car"] - 0.05
    assert expected["bench"] > SKEWED["bench"] + 0.01


@pytest.mark.slow
def test_proportional_prior_guesser_is_above_chance_as_predicted(
    proportional_run: dict[str, object],
) -> None:
    """Measured about 0.304 against the exact 0.306: proportional draws leak the prior."""
    measured = proportional_run["guesser"]
    assert isinstance(measured, float)
    _, expected = exact_proportional(SKEWED)
    assert 0.30 < expected < 0.31
    assert abs(measured - expected) < 4.5 * binomial_sd(expected, N_DRAWS)
    assert measured > 0.25 + 0.04


@pytest.mark.slow
def test_exchangeable_scheme_matches_the_prior_and_the_guesser_scores_chance(
    exchangeable_run: dict[str, object],
) -> None:
    """Measured about 0.250: with the exchangeable design the prior gives nothing away."""
    share, measured = exchangeable_run["share"], exchangeable_run["guesser"]
    assert isinstance(share, dict)
    assert isinstance(measured, float)
    for c, p in SKEWED.items():
        assert abs(share[c] - p) < 5 * binomial_sd(p, 3 * N_DRAWS), (c, share[c], p)
    assert abs(measured - 0.25) < 4.5 * binomial_sd(0.25, N_DRAWS)  # about +- 0.014


def test_both_schemes_agree_with_chance_for_a_uniform_prior() -> None:
    uniform = dict.fromkeys(["car", "bus", "truck", "boat", "bench", "bicycle"], 1.0)
    for scheme in ("proportional", "exchangeable"):
        g = rng(4)
        seen = Counter(
            d for _ in range(3000) for d in draw_distractors("car", uniform, 3, g, scheme)
        )
        for c in uniform.keys() - {"car"}:  # 3 of the 5 others, each in 60 % of draws
            assert abs(seen[c] / 3000 - 0.6) < 4.5 * binomial_sd(0.6, 3000), (scheme, c)


def test_conditional_poisson_inclusion_matches_brute_force() -> None:
    w = np.array([0.3, 1.2, 0.7, 2.0, 0.1, 0.5])
    for k in (1, 2, 3, 4):
        sets = list(itertools.combinations(range(len(w)), k))
        probs = np.array([np.prod(w[list(s)]) for s in sets])
        probs /= probs.sum()
        single, joint = np.zeros(len(w)), np.zeros((len(w), len(w)))
        for s, p in zip(sets, probs, strict=True):
            for i, j in itertools.product(s, s):
                joint[i, j] += p
            single[list(s)] += p
        np.testing.assert_allclose(cps_inclusion(w, k), single, atol=1e-14)
        np.testing.assert_allclose(cps_joint_inclusion(w, k), joint, atol=1e-14)


# --------------------------------------------------------------------------------------------
# Verification


def test_verification_pair_one_true_one_distractor() -> None:
    for seed in range(100):
        yes, no = verification_questions("airplane", {**SKEWED, "airplane": 0.1}, rng(seed))
        for q in (yes, no):
            assert q.task == "verify"
            assert q.chance == 0.5
            assert q.letters == ("A", "B")
            assert q.options == ("Yes", "No")
            assert q.true_category == "airplane"
            assert q.abstain is None
        assert yes.asked_category == "airplane"
        assert yes.asked_is_true is True
        assert yes.correct == "A"
        assert yes.option_for(yes.correct) == "Yes"
        assert no.asked_category in SKEWED
        assert no.asked_is_true is False
        assert no.correct == "B"
        assert no.option_for(no.correct) == "No"
    assert yes.prompt == (
        "Is the object in the red box an airplane?\nA. Yes\nB. No\nAnswer with the letter only."
    )
    assert no.prompt.startswith(f"Is the object in the red box a {no.asked_category}?\n")


def test_verification_is_deterministic_and_abstain_is_last() -> None:
    a = verification_questions("bus", SKEWED, rng(8), abstain="generic")
    assert a == verification_questions("bus", SKEWED, rng(8), abstain="generic")
    assert pickle.loads(pickle.dumps(a)) == a
    for q in a:
        assert q.letters == ("A", "B", "C")
        assert q.abstain == "C"
        assert q.options == ("Yes", "No", GENERIC)
        assert q.answer_letters == ("A", "B")
        assert q.prompt.split("\n")[3] == f"C. {GENERIC}"
        assert [r.id for r in q.templates] == [
            "t3.verify.v1",
            "answer.letter.v1",
            "abstain.generic.v1",
        ]


def test_verification_distractor_follows_the_prior() -> None:
    g, n = rng(21), 8000
    asked = Counter(verification_questions("car", SKEWED, g)[1].asked_category for _ in range(n))
    for c, p in SKEWED.items():
        expected = 0.0 if c == "car" else p / (1 - SKEWED["car"])
        assert abs(asked[c] / n - expected) < 4.5 * binomial_sd(expected, n) + 1e-12, c


def test_exchangeable_verification_asks_each_category_as_often_true_as_false() -> None:
    g, names = rng(22), list(SKEWED)
    p = np.array(list(SKEWED.values()))
    asked_true, asked_false = Counter[str](), Counter[str]()
    for i in g.choice(len(names), size=8000, p=p):
        yes, no = verification_questions(names[int(i)], SKEWED, g, scheme="exchangeable")
        asked_true[yes.asked_category] += 1  # type: ignore[index]
        asked_false[no.asked_category] += 1  # type: ignore[index]
    for c, prior in SKEWED.items():  # both follow the prior: P(true | asked c) = 1/2
        assert abs(asked_false[c] / 8000 - prior) < 4.5 * binomial_sd(prior, 8000), c
        assert abs(asked_true[c] / 8000 - prior) < 4.5 * binomial_sd(prior, 8000), c


# --------------------------------------------------------------------------------------------
# Verbalized confidence


@pytest.mark.parametrize("wording", VERBALIZED_WORDINGS)
def test_verbalized_question_keeps_the_options_and_changes_the_instruction(wording: str) -> None:
    q = identification_question("bus", SKEWED, rng(1), abstain="reason")
    v = verbalized_question(q, wording)
    assert (v.letters, v.options, v.correct, v.abstain) == (q.letters, q.options, q.correct, "E")
    assert v.readout == "verbalized"
    assert q.readout == "letter"
    assert v.instruction_template.id == wording
    assert v.instruction_template.sha256 == get_template(wording).sha256
    assert v.question_template == q.question_template
    assert v.abstain_template == q.abstain_template
    body = q.prompt.removesuffix("Answer with the letter only.")
    assert v.prompt == body + get_template(wording).text
    assert "letter only" not in v.prompt
    assert verbalized_prompt(q, wording) == v.prompt


def test_three_verbalized_prompts_differ_and_verification_works_too() -> None:
    yes, _ = verification_questions("umbrella", {"umbrella": 1, "handbag": 1}, rng())
    prompts = {verbalized_prompt(yes, w) for w in VERBALIZED_WORDINGS}
    assert len(prompts) == 3
    assert all(
        p.startswith("Is the object in the red box an umbrella?\nA. Yes\nB. No\n") for p in prompts
    )


def test_verbalized_question_errors() -> None:
    q = identification_question("bus", SKEWED, rng())
    with pytest.raises(InputError, match="is a 'instruction' template"):
        verbalized_question(q, "answer.letter.v1")
    with pytest.raises(InputError, match="unknown template id"):
        verbalized_question(q, "verbal.loud.v1")
    stale = dataclasses.replace(
        q, question_template=dataclasses.replace(q.question_template, sha256="0" * 64)
    )
    with pytest.raises(InputError, match="changed since the question was built"):
        verbalized_question(stale, VERBALIZED_WORDINGS[0])


def test_question_checks_its_own_consistency() -> None:
    q = identification_question("bus", SKEWED, rng())
    with pytest.raises(InputError, match="correct letter"):
        dataclasses.replace(q, correct="E")
    with pytest.raises(InputError, match="pair up"):
        dataclasses.replace(q, options=q.options[:3])
    with pytest.raises(InputError, match="not one of the option letters"):
        q.option_for("Z")
    assert isinstance(q, Question)
