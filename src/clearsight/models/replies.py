"""What a backend's reply must be before anything reads it: the one check at the boundary.

Every protocol reads replies through :func:`checked_replies` (a batch whose bad replies fail
alone) or :func:`complete_checked` (a batch that fails as a whole), both built on
:func:`checked_reply`, so a reply that cannot be read becomes its item's failed record with the
reason instead of stopping the run or being stored as a result. A reply is refused
(:class:`UnreadableReplyError`) unless it is a :class:`~clearsight.models.base.Response` whose

* ``texts`` are strings, ``n`` of them when the request generates;
* ``candidate_probs`` is None or a mapping from strings — the candidates the request offered,
  when it offered any — to real numbers, each finite and in [0, 1]: ``-1e-9`` is refused, not
  clipped, because a probability below 0 (or NaN, or above 1) says the backend's arithmetic
  went wrong and a clipped one would be stored as a result;
* ``token_logprobs`` is None or, per sample, per token a :class:`~clearsight.models.base.
  TokenLogprob` with a finite log-probability <= 0 (its top-k alternatives too), give or take
  the float32 rounding of a log-softmax (:data:`~clearsight.models.logprobs.LOGPROB_SLACK`,
  1e-6: what a server computes as log(1) may come out a hair above 0);
* ``uncovered_mass`` is None or in [0, 1], ``latency_s`` finite and >= 0, ``usage`` whole
  numbers >= 0 by name and ``extra`` a mapping by name.

Text that is not valid Unicode — a lone surrogate, half of a UTF-16 pair, as a reply cut inside
an emoji carries — cannot be stored as UTF-8. It is repaired rather than refused: each lone
surrogate is replaced with U+FFFD (a pair split into two code points is joined), in the texts,
the token strings and any string in ``extra``, and the reply says where in
``extra["replaced_surrogates"]`` (e.g. ``["texts[0]"]``). A reply with nothing to repair is
returned as it is, so the records of good runs do not change.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from clearsight.models.base import (
    Backend,
    PartialBatchError,
    Request,
    Response,
    TokenLogprob,
)
from clearsight.models.logprobs import LOGPROB_SLACK
from clearsight.validate import short_repr

if TYPE_CHECKING:
    from pydantic import JsonValue

#: The key of ``Response.extra`` that lists where lone surrogates were replaced.
REPLACED_SURROGATES: Final = "replaced_surrogates"


def replaced_where(reply: Response, part: str = "") -> list[str]:
    """Where :func:`checked_reply` replaced lone surrogates in ``reply`` (empty when nowhere),
    each place prefixed with ``part`` (which of several replies a stored text joins)."""
    places = reply.extra.get(REPLACED_SURROGATES)  # a list, as checked_reply notes it
    return [f"{part}{where}" for where in places] if isinstance(places, list | tuple) else []


def noting_replaced(raw: dict[str, JsonValue], where: Sequence[str]) -> dict[str, JsonValue]:
    """A record's raw output that keeps a reply's text rather than the whole reply (a
    trajectory, a sampled alternative), with ``extra.replaced_surrogates`` saying ``where``
    lone surrogates were replaced, as a stored reply (:meth:`Response.to_json`) says it;
    ``raw`` as it is when nothing was replaced, so the records of good runs do not change."""
    return {**raw, "extra": {REPLACED_SURROGATES: list(where)}} if where else raw


class UnreadableReplyError(ValueError):
    """A backend's reply that breaks the contract of a response; the message says where."""


def checked_reply(reply: object, request: Request, *, count_texts: bool = True) -> Response:
    """``reply`` as read-outs may trust it (see the module docstring): the same object when it
    needs no repair, a copy with its lone surrogates replaced otherwise;
    :class:`UnreadableReplyError` naming the field when it cannot be read. ``count_texts=False``
    leaves the number of texts to a caller that counts them itself (the probe's sensor, whose
    message says how many samples its model must give)."""
    if not isinstance(reply, Response):
        raise UnreadableReplyError(f"the backend returned {short_repr(reply)}, not a Response")
    repaired: list[str] = []
    texts = _texts(reply.texts, request if count_texts else None, repaired)
    logprobs = _token_logprobs(reply.token_logprobs, repaired)
    _candidate_probs(reply.candidate_probs, request.candidates)
    if reply.uncovered_mass is not None:
        _probability(reply.uncovered_mass, "uncovered_mass")
    if _number(reply.latency_s, "latency_s") < 0:
        raise UnreadableReplyError(f"latency_s = {reply.latency_s!r} is below 0")
    _usage(reply.usage)
    extra = _extra(reply.extra, repaired)
    if not repaired:
        return reply
    extra = {**extra, REPLACED_SURROGATES: repaired}
    return dataclasses.replace(reply, texts=texts, token_logprobs=logprobs, extra=extra)


def checked_replies(backend: Backend, requests: Sequence[Request]) -> list[Response | Exception]:
    """Each request's checked reply (:func:`checked_reply`), or the exception that says why it
    has none: a bad request or reply fails alone.

    The batch goes in one call. A :class:`~clearsight.models.base.PartialBatchError` keeps the
    successes it carries (no request is redone); a call that raises anything else, or answers
    with another number of replies than requests, is redone one request a call.
    """
    if not requests:
        return []
    got: list[Any] | None
    try:
        got = list(backend.complete(requests))
    except PartialBatchError as exc:
        got = list(exc.results)
    except Exception:
        got = None
    if got is None or len(got) != len(requests):
        got = [_alone(backend, r) for r in requests]
    return [_checked_or_why(g, r) for g, r in zip(got, requests, strict=True)]


def complete_checked(
    backend: Backend, requests: Sequence[Request], *, count_texts: bool = True
) -> list[Response]:
    """Every reply of one batch call, checked (:func:`checked_reply`); the first problem raised
    (the backend's own exception, or :class:`UnreadableReplyError`) where a caller handles the
    batch as one."""
    replies = list(backend.complete(requests))
    if len(replies) != len(requests):
        raise UnreadableReplyError(_count(len(replies), len(requests)))
    return [
        checked_reply(g, r, count_texts=count_texts) for g, r in zip(replies, requests, strict=True)
    ]


def _alone(backend: Backend, request: Request) -> Any:
    """The reply to ``request`` sent alone, or the exception that says why there is none."""
    try:
        replies = list(backend.complete([request]))
    except Exception as exc:
        return exc
    return replies[0] if len(replies) == 1 else UnreadableReplyError(_count(len(replies), 1))


def _count(got: int, asked: int) -> str:
    return f"the backend returned {got} replies for {asked} request{'s' if asked != 1 else ''}"


def _checked_or_why(reply: object, request: Request) -> Response | Exception:
    if isinstance(reply, Exception):
        return reply
    try:
        return checked_reply(reply, request)
    except UnreadableReplyError as exc:
        return exc


# --------------------------------------------------------------------------------------------
# The fields


def _number(value: object, where: str) -> float:
    """``value`` as a finite float; refused when it is not a real number (a bool is not)."""
    if type(value) is float:  # the common case, without the abstract-class checks
        number = value
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UnreadableReplyError(f"{where} is {short_repr(value)}, not a number")
    else:
        number = float(value)
    if not math.isfinite(number):
        raise UnreadableReplyError(f"{where} = {value!r} is not finite")
    return number


def _probability(value: object, where: str) -> float:
    p = _number(value, where)
    if not 0.0 <= p <= 1.0:
        raise UnreadableReplyError(f"{where} = {value!r} is not a probability in [0, 1]")
    return p


def _logprob(value: object, where: str) -> float:
    lp = _number(value, where)
    if lp > LOGPROB_SLACK:
        raise UnreadableReplyError(f"{where} = {value!r} is a log-probability above 0")
    return lp


def _text(value: object, where: str, repaired: list[str]) -> str:
    """A string of the reply, its lone surrogates replaced with U+FFFD (``where`` noted in
    ``repaired``); refused when it is not a string."""
    if not isinstance(value, str):
        raise UnreadableReplyError(f"{where} is {short_repr(value)}, not a string")
    if _is_unicode(value):
        return value
    repaired.append(where)
    # through UTF-16: a pair split into two code points joins, a lone half is replaced
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _is_unicode(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (it holds no surrogate code point)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _sequence(value: object, where: str) -> Sequence[Any]:
    if not isinstance(value, tuple | list):
        raise UnreadableReplyError(f"{where} is {short_repr(value)}, not a list")
    return value


def _texts(value: object, request: Request | None, repaired: list[str]) -> tuple[str, ...]:
    """The texts, as many as ``request`` generates (None: any number)."""
    texts = tuple(
        _text(t, f"texts[{i}]", repaired) for i, t in enumerate(_sequence(value, "texts"))
    )
    if request is not None and request.generate and len(texts) != request.n:
        raise UnreadableReplyError(
            f"the reply holds {len(texts)} texts for a request of {request.n} "
            f"sample{'s' if request.n != 1 else ''}"
        )
    return texts


def _token_logprobs(
    value: object, repaired: list[str]
) -> tuple[tuple[TokenLogprob, ...], ...] | None:
    if value is None:
        return None
    out = []
    for i, sample in enumerate(_sequence(value, "token_logprobs")):
        tokens = []
        for j, tok in enumerate(_sequence(sample, f"token_logprobs[{i}]")):
            where = f"token_logprobs[{i}][{j}]"
            if not isinstance(tok, TokenLogprob):
                raise UnreadableReplyError(f"{where} is {short_repr(tok)}, not a TokenLogprob")
            top = []
            for k, alt in enumerate(_sequence(tok.top, f"{where}.top")):
                if not isinstance(alt, tuple | list) or len(alt) != 2:
                    raise UnreadableReplyError(
                        f"{where}.top[{k}] is {short_repr(alt)}, not a (token, logprob) pair"
                    )
                top.append((_text(alt[0], f"{where}.top[{k}]", repaired), alt[1]))
                _logprob(alt[1], f"{where}.top[{k}] log-probability")
            token = _text(tok.token, f"{where}.token", repaired)
            _logprob(tok.logprob, f"{where}.logprob")
            tokens.append(TokenLogprob(token, tok.logprob, tuple(top)))
        out.append(tuple(tokens))
    return tuple(out)


def _candidate_probs(value: object, offered: Sequence[str]) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise UnreadableReplyError(
            f"candidate_probs is {short_repr(value)}, not a mapping from candidates to "
            "probabilities"
        )
    for key, p in value.items():
        if not isinstance(key, str) or (offered and key not in offered):
            asked = ", ".join(map(repr, offered))
            raise UnreadableReplyError(
                f"candidate_probs names {short_repr(key)}, not a candidate the request offered "
                f"({asked})"
                if offered
                else f"candidate_probs names {short_repr(key)}, not a string"
            )
        if not offered and not _is_unicode(key):  # not repaired: it would name another string
            raise UnreadableReplyError(f"candidate_probs names {key!r}, not valid Unicode")
        _probability(p, f"candidate_probs[{key!r}]")


def _usage(value: object) -> None:
    if not isinstance(value, Mapping):
        raise UnreadableReplyError(f"usage is {short_repr(value)}, not a mapping")
    for key, n in value.items():
        if not isinstance(key, str):
            raise UnreadableReplyError(f"usage names {short_repr(key)}, not a string")
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise UnreadableReplyError(f"usage[{key!r}] is {short_repr(n)}, not a count")


def _extra(value: object, repaired: list[str]) -> Mapping[str, object]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise UnreadableReplyError(f"extra is {short_repr(value)}, not a mapping by name")
    before = len(repaired)
    out = _strings(value, "extra", repaired)
    return value if len(repaired) == before else out


#: Types that hold no string: :func:`_strings` returns them without the abstract-class checks.
_PLAIN: Final = frozenset({float, int, bool, type(None)})


def _strings(value: Any, where: str, repaired: list[str]) -> Any:
    """``value`` (any JSON-like data) with the lone surrogates of its strings replaced."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, str):
        return _text(value, where, repaired)
    if isinstance(value, Mapping):
        return {
            _strings(k, f"{where} key", repaired): _strings(v, f"{where}[{k!r}]", repaired)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_strings(v, f"{where}[{i}]", repaired) for i, v in enumerate(value)]
    return value
