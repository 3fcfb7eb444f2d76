"""The ``Question`` every task builds: a fully rendered prompt plus what is needed to score it.

A Question holds no pixels: it pairs with a (degraded) scene at execution time, is picklable and
compares by value, so a work item can carry it and its content can enter the item's key.

Letters: the answer options are lettered A, B, ... in option order; the abstain option, when
present, takes the next letter and is always last (E for identification, C for verification).
``chance`` is ``1 / number of answer options`` (abstain excluded): 0.25 for t2, 0.5 for t3.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, replace
from typing import Final, Literal, get_args

from clearsight.specs import Part
from clearsight.tasks.templates import Template, get_template
from clearsight.validate import InputError

#: The two boxed-object tasks: t2 identification and t3 verification.
Task = Literal["identify", "verify"]
#: How the answer is read: first-token letter probabilities, or a parsed verbalized reply.
Readout = Literal["letter", "verbalized"]

#: The shipped instruction that makes the first generated token the option letter.
LETTER_INSTRUCTION: Final[str] = "answer.letter.v1"
#: The abstain wordings (docs/methods.md §3) and their template ids.
AbstainWording = Literal["reason", "generic"]
ABSTAIN_TEMPLATES: Final[dict[AbstainWording, str]] = {
    "reason": "abstain.reason.v1",
    "generic": "abstain.generic.v1",
}
#: The three verbalized-confidence wordings, in a fixed order.
VERBALIZED_WORDINGS: Final[tuple[str, ...]] = (
    "verbal.plain.v1",
    "verbal.percent.v1",
    "verbal.scale.v1",
)


@dataclass(frozen=True)
class TemplateRef:
    """The id and content hash of a template a prompt was rendered from (stored with records)."""

    id: str
    sha256: str

    @classmethod
    def of(cls, template: Template) -> TemplateRef:
        return cls(template.id, template.sha256)


@dataclass(frozen=True)
class Question(Part):
    """One rendered boxed-object question and its answer key.

    ``letters``/``options`` are aligned and include the abstain option last when there is one;
    ``correct`` is the letter of the right answer and ``abstain`` the abstain letter or None.
    ``true_category`` is the boxed object's category. For verification, ``asked_category`` is the
    category named in the question and ``asked_is_true`` whether it is the true one (both None for
    identification). ``question_template``/``instruction_template``/``abstain_template`` are the
    templates the prompt was rendered from, by id and content hash.
    """

    task: Task
    prompt: str
    letters: tuple[str, ...]
    options: tuple[str, ...]
    correct: str
    abstain: str | None
    chance: float
    true_category: str
    question_template: TemplateRef
    instruction_template: TemplateRef
    abstain_template: TemplateRef | None = None
    asked_category: str | None = None
    asked_is_true: bool | None = None
    readout: Readout = "letter"

    def __post_init__(self) -> None:
        if self.task not in get_args(Task):
            raise InputError(f"task must be one of {get_args(Task)}, got {self.task!r}")
        if self.readout not in get_args(Readout):
            raise InputError(f"readout must be one of {get_args(Readout)}, got {self.readout!r}")
        if len(self.letters) != len(self.options) or len(set(self.letters)) != len(self.letters):
            raise InputError(
                f"letters {self.letters} and options {self.options} must pair up one to one"
            )
        if self.correct not in self.answer_letters:
            raise InputError(f"correct letter {self.correct!r} is not an answer letter")
        if self.abstain is not None and self.abstain != self.letters[-1]:
            raise InputError(f"abstain letter {self.abstain!r} must be the last letter")
        if (self.abstain is None) != (self.abstain_template is None):
            raise InputError("abstain letter and abstain template go together")
        if (self.task == "verify") != (self.asked_category is not None):
            raise InputError("asked_category is set for verification questions only")

    @property
    def answer_letters(self) -> tuple[str, ...]:
        """The letters of the substantive options (abstain excluded)."""
        return self.letters[:-1] if self.abstain is not None else self.letters

    @property
    def templates(self) -> tuple[TemplateRef, ...]:
        """Every template the prompt was rendered from, question template first."""
        refs = (self.question_template, self.instruction_template, self.abstain_template)
        return tuple(r for r in refs if r is not None)

    def option_for(self, letter: str) -> str:
        """The option text behind ``letter`` (InputError for a letter the question lacks)."""
        if letter not in self.letters:
            raise InputError(f"{letter!r} is not one of the option letters {self.letters}")
        return self.options[self.letters.index(letter)]


def option_letters(n: int) -> tuple[str, ...]:
    """The first ``n`` capital letters: A, B, C, ..."""
    if not 1 <= n <= 26:
        raise InputError(f"need between 1 and 26 options, got {n}")
    return tuple(string.ascii_uppercase[:n])


def format_options(letters: tuple[str, ...], options: tuple[str, ...]) -> str:
    """One line per option, ``"A. car"``, in letter order."""
    return "\n".join(f"{letter}. {text}" for letter, text in zip(letters, options, strict=True))


def indefinite_article(noun: str) -> str:
    """ "an" before a vowel letter, else "a" (right for every COCO category name)."""
    return "an" if noun[:1].lower() in "aeiou" else "a"


def abstain_template(abstain: AbstainWording | None) -> Template | None:
    """The abstain option's template for a wording name, None for no abstain option."""
    if abstain is None:
        return None
    if abstain not in ABSTAIN_TEMPLATES:
        raise InputError(
            f"abstain must be None or one of {tuple(ABSTAIN_TEMPLATES)}, got {abstain!r}"
        )
    return get_template(ABSTAIN_TEMPLATES[abstain], "abstain")


def render_prompt(
    question_template: Template,
    instruction: Template,
    letters: tuple[str, ...],
    options: tuple[str, ...],
    asked_category: str | None = None,
) -> str:
    """Fill a question template with its lettered options, instruction and asked category."""
    values = {"options": format_options(letters, options), "instruction": instruction.text}
    if question_template.kind == "verify":
        if asked_category is None:
            raise InputError(f"template {question_template.id!r} needs the asked category")
        values.update(category=asked_category, article=indefinite_article(asked_category))
    return question_template.text.format(**values)


def _checked(ref: TemplateRef) -> Template:
    """The shipped template behind ``ref``, refusing one whose content has changed since."""
    template = get_template(ref.id)
    if template.sha256 != ref.sha256:
        raise InputError(
            f"template {ref.id!r} changed since the question was built "
            f"(hash {ref.sha256[:12]} then, {template.sha256[:12]} now)"
        )
    return template


def verbalized_question(question: Question, wording_id: str) -> Question:
    """The same question asking for the letter AND a 0-100 confidence (``readout="verbalized"``).

    Identical options, order and answer key; the letter-only instruction is replaced by the
    verbalized-confidence template ``wording_id`` (one of ``VERBALIZED_WORDINGS``), whose reply
    format is ``Answer: <letter>`` then ``Confidence: <0-100>`` on the next line.
    """
    wording = get_template(wording_id, "verbalized")
    prompt = render_prompt(
        _checked(question.question_template),
        wording,
        question.letters,
        question.options,
        question.asked_category,
    )
    return replace(
        question, prompt=prompt, instruction_template=TemplateRef.of(wording), readout="verbalized"
    )


def verbalized_prompt(question: Question, wording_id: str) -> str:
    """The prompt text of ``verbalized_question(question, wording_id)``."""
    return verbalized_question(question, wording_id).prompt
