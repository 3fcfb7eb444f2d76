"""t3 verification: "Is the object in the red box a {category}?" asked with the true category and
with a prior-matched distractor; chance 0.5.

The answers are lettered options (A. Yes, B. No, in that fixed order, from the template's
``options``) rather than free "Yes"/"No" tokens, so the same first-token letter-probability
read-out serves t2 and t3 and an abstain option is simply the next letter (C), always last.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np

from clearsight.tasks.prior import DistractorScheme, check_category, check_rng, draw_distractors
from clearsight.tasks.question import (
    LETTER_INSTRUCTION,
    AbstainWording,
    Question,
    TemplateRef,
    abstain_template,
    option_letters,
    render_prompt,
)
from clearsight.tasks.templates import Template, get_template
from clearsight.validate import InputError

#: The shipped verification template.
VERIFY_TEMPLATE: Final[str] = "t3.verify.v1"


def _verify_question(
    true_category: str,
    asked: str,
    question_t: Template,
    instruction_t: Template,
    abstain_t: Template | None,
) -> Question:
    """The verification question asking whether the boxed object is ``asked``."""
    if len(question_t.options) != 2:
        raise InputError(f"template {question_t.id!r} needs exactly two options (yes, no)")
    options = list(question_t.options)
    letters = option_letters(2 + (abstain_t is not None))
    if abstain_t is not None:
        options.append(abstain_t.text)
    return Question(
        task="verify",
        prompt=render_prompt(question_t, instruction_t, letters, tuple(options), asked),
        letters=letters,
        options=tuple(options),
        correct="A" if asked == true_category else "B",
        abstain=letters[-1] if abstain_t is not None else None,
        chance=0.5,
        true_category=true_category,
        question_template=TemplateRef.of(question_t),
        instruction_template=TemplateRef.of(instruction_t),
        abstain_template=TemplateRef.of(abstain_t) if abstain_t is not None else None,
        asked_category=asked,
        asked_is_true=asked == true_category,
    )


def verification_questions(
    true_category: str,
    prior: Mapping[str, float],
    rng: np.random.Generator,
    *,
    abstain: AbstainWording | None = None,
    template_id: str = VERIFY_TEMPLATE,
    instruction_id: str = LETTER_INSTRUCTION,
    scheme: DistractorScheme = "proportional",
) -> tuple[Question, Question]:
    """The pair (asks the true category, asks a distractor) for a boxed ``true_category``.

    The distractor is ``draw_distractors(true_category, prior, 1, rng, scheme)[0]``: one draw
    proportional to the prior among the other categories (scheme "proportional"), or the size-2
    exchangeable design under which each category is asked as often as a true as a false
    candidate (scheme "exchangeable", needs every prior <= 1/2). The correct letter is A (Yes)
    for the first question and B (No) for the second.
    """
    check_category(true_category, "true category")
    check_rng(rng)
    question_t = get_template(template_id, "verify")
    instruction_t = get_template(instruction_id, "instruction")
    abstain_t = abstain_template(abstain)
    (distractor,) = draw_distractors(true_category, prior, 1, rng, scheme)
    return (
        _verify_question(true_category, true_category, question_t, instruction_t, abstain_t),
        _verify_question(true_category, distractor, question_t, instruction_t, abstain_t),
    )
