"""Detector mode on questions about a whole photo (no red box): each reader on drawn images,
the colour names, and the question parsers under hypothesis (the bundled photos with the real
detector: ``test_photo_bundled.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clearsight.perceiver import parse_question
from clearsight.perceiver.colours import BASIC_COLOURS, colour_name, colour_shares, named_colours
from clearsight.perceiver.perception import Perception, Seen
from clearsight.perceiver.photo import (
    NUMBERS,
    about_photo,
    distinct,
    option_number,
    photo_probs,
    read_photo,
)
from clearsight.perceiver.question import KINDS, mentions, question_type
from clearsight.scenes.categories import CATEGORY_NAMES

# ----------------------------------------------------------------------------- each reader


def _seen(label: str, box: tuple[float, float, float, float], score: float = 0.8) -> Seen:
    return Seen(label, score, box, 0.0, 0.0, False, "centre", "")


def _perception(width: int, height: int, *objects: Seen) -> Perception:
    whole = (0, 0, width, height)
    return Perception(width, height, False, whole, objects, 0.5, 0.2, 0.2, False, None, 1)


def _options(question: str, *options: str) -> str:
    lines = [f"({chr(65 + i)}) {o}" for i, o in enumerate(options)]
    return "\n".join([question, "Options:", *lines, "Answer with the letter only."])


def test_colour_of_the_object_against_its_surroundings():
    image = np.full((200, 300, 3), (235, 200, 60), np.uint8)  # a yellow wall
    image[60:140, 100:200] = (40, 40, 40)  # a dark object...
    image[80:120, 120:180] = (200, 20, 30)  # ...with a red middle
    car = _seen("car", (100.0, 60.0, 200.0, 140.0))
    p = _perception(300, 200, car)
    q = parse_question(_options("What colour is the car?", "blue", "black", "red", "yellow"))
    reading = read_photo(p, q, image)
    assert reading.reply == "red"
    probs = photo_probs(reading, q)
    assert max(probs, key=probs.__getitem__) == "C"
    assert probs["A"] == pytest.approx(probs["D"])  # neither blue nor yellow marks the car
    wall = parse_question(_options("What colour is the wall?", "blue", "red", "yellow"))
    assert read_photo(p, wall, image).reply == "yellow"  # no object named: the whole photo


def test_counting_distinct_objects_of_the_asked_kind():
    big = _seen("bicycle", (0.0, 0.0, 100.0, 100.0), 0.6)
    part = _seen("bicycle", (10.0, 10.0, 40.0, 40.0), 0.4)  # inside the big one: the same
    other = _seen("bicycle", (150.0, 0.0, 250.0, 100.0), 0.5)
    dog = _seen("dog", (0.0, 0.0, 100.0, 100.0), 0.5)
    assert distinct([big, part, other]) == [big, other]
    p = _perception(300, 120, big, part, other, dog)
    image = np.zeros((120, 300, 3), np.uint8)
    q = parse_question(_options("How many bicycles are there?", "none", "one", "two", "three"))
    reading = read_photo(p, q, image)
    assert reading.reply == "2"
    assert reading.scores == (0.0, 0.0, 1.0, 0.0)
    animals = parse_question("How many animals are there?")
    assert read_photo(p, animals, image).reply == "1"
    wheels = parse_question(_options("How many wheels does the bicycle have?", "two", "four"))
    assert read_photo(p, wheels, image).scores == ()  # wheels are no COCO category


def test_position_relative_to_a_second_object_and_presence():
    dog = _seen("dog", (0.0, 100.0, 50.0, 150.0))
    person = _seen("person", (100.0, 20.0, 140.0, 150.0))
    p = _perception(300, 160, dog, person)
    image = np.zeros((160, 300, 3), np.uint8)
    q = parse_question(
        _options(
            "Where is the dog relative to the person?",
            "to the left of the person",
            "to the right of the person",
            "there is no dog",
        )
    )
    reading = read_photo(p, q, image)
    assert reading.reply == "below and to the left of the person"
    assert reading.scores == (1.0, 0.0, 0.0)
    yes = parse_question(_options("Is there a dog?", "yes", "no"))
    no = parse_question(_options("Is there a cat?", "yes", "no"))
    assert photo_probs(read_photo(p, yes, image), yes)["A"] == pytest.approx(0.9)
    assert photo_probs(read_photo(p, no, image), no)["A"] == pytest.approx(0.25)


def test_questions_about_the_red_box_keep_the_box_rule():
    p = _perception(100, 100)
    assert about_photo(p, parse_question("What animal is this?"))
    assert not about_photo(p, parse_question("Which of these names the object in the red box?"))


def test_colour_names_in_cielab():
    def patch(rgb: tuple[int, int, int]) -> np.ndarray:
        return np.full((4, 4, 3), rgb, np.uint8)

    assert colour_name(patch((20, 40, 160))) == "blue"
    assert colour_name(patch((230, 120, 20))) == "orange"
    assert colour_name(patch((90, 60, 40))) == "brown"
    assert colour_name(patch((200, 200, 200))) == "white"  # nearer xkcd white than its grey
    assert colour_name(np.zeros((0, 3), np.uint8)) == "unknown"
    shares = colour_shares(np.array([[250, 250, 250], [10, 10, 10]] * 3, np.uint8), BASIC_COLOURS)
    assert shares["white"] == pytest.approx(0.5)
    assert shares["black"] == pytest.approx(0.5)
    assert named_colours("dry yellow-brown") == ("yellow brown",)
    assert named_colours("spotted black and white") == ("black", "white")
    assert named_colours("in colour") == ()


# ----------------------------------------------------------------------------- parsers


_TEXT = st.text(
    alphabet=st.characters(codec="ascii", exclude_characters="\r\x0b\x0c\x1c\x1d\x1e\x85")
)
_OPTION_TEXT = st.from_regex(r"[a-z][a-z ,'-]{0,30}[a-z]", fullmatch=True)


@given(st.lists(_OPTION_TEXT, min_size=2, max_size=6), st.booleans())
def test_parse_question_reads_both_option_forms(options, parenthesised):
    letters = [chr(65 + i) for i in range(len(options))]
    lines = [
        f"({x}) {o}" if parenthesised else f"{x}. {o}"
        for x, o in zip(letters, options, strict=True)
    ]
    q = parse_question("\n".join(["What is it?", *lines, "Answer with the letter only."]))
    assert q.letters == tuple(letters)
    assert q.options == tuple(o.strip() for o in options)
    assert q.stem == "What is it?"


@given(_TEXT)
def test_question_readers_take_any_text(text):
    assert question_type(text) in (
        "count",
        "colour",
        "greyscale",
        "position",
        "presence",
        "identify",
        "other",
    )
    found = mentions(text)
    assert [m.at for m in found] == sorted(m.at for m in found)
    for m in found:
        assert m.classes
        assert m.classes <= set(CATEGORY_NAMES)
        assert m.word in CATEGORY_NAMES or m.word in KINDS
    for colour in named_colours(text):
        assert named_colours(colour) == (colour,)
    said = option_number(text)
    assert said is None or said[0] >= 0


@given(st.sampled_from(CATEGORY_NAMES), st.sampled_from(["", "s"]))
def test_how_many_names_the_counted_category(category, plural):
    text = f"How many {category}{plural} are in the image?"
    assert question_type(text) == "count"
    assert [m.word for m in mentions(text)] == [category]


@given(st.integers(0, 12), st.booleans(), st.booleans())
def test_option_numbers(n, as_word, more):
    word = next(w for w, i in NUMBERS.items() if i == n) if as_word else str(n)
    text = f"more than {word}" if more else word
    assert option_number(text) == (n, more)
