"""Issue 30, finding 9: ``timeout_s`` bounds a whole HTTP attempt of the ``openai:`` backend,
not each read. Against a real local server that answers at once and then sends its body one
byte a second, forever: one attempt ends within ~``timeout_s``, and the retries end too, so a
run is never held by a server that never stops trickling."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from clearsight.models import Message, Request
from clearsight.models.base import RequestFailedError
from clearsight.models.openai_api import make_openai
from fixtures.hostile import trickle_server


def _within(seconds: float, call: Callable[[], Any]) -> tuple[float, BaseException | None]:
    """Run ``call`` in a thread: its wall time and what it raised; fails the test when it is
    still running after ``seconds`` (the thread is left behind: a daemon)."""
    outcome: list[BaseException | None] = []
    started = time.perf_counter()

    def target() -> None:
        try:
            call()
        except BaseException as exc:  # the outcome under test
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting on the server after {seconds} s"
    return time.perf_counter() - started, outcome[0]


def _ask(url: str, **options: Any) -> Callable[[], Any]:
    backend = make_openai(f"{url}#trickled", options)
    request = Request((Message.user("Which letter?"),), candidates=("A", "B"), generate=False)
    return lambda: backend.complete([request])


def test_one_attempt_ends_at_its_deadline() -> None:
    with trickle_server(interval_s=1.0) as url:
        elapsed, raised = _within(30, _ask(url, timeout_s=3, max_retries=0))
    print(f"openai_trickle_attempt_s: {elapsed:.2f}")
    assert isinstance(raised, RequestFailedError)
    assert "timeout: no complete reply within 3 s" in str(raised)
    assert raised.attempts == 1
    assert 2.9 <= elapsed <= 4.0


def test_a_server_that_never_stops_trickling_does_not_hold_the_run() -> None:
    options = {"timeout_s": 1, "max_retries": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.02}
    with trickle_server(interval_s=0.2) as url:
        elapsed, raised = _within(30, _ask(url, **options))
    assert isinstance(raised, RequestFailedError)
    assert raised.attempts == 3
    assert elapsed == pytest.approx(3.0, abs=1.0)  # three attempts of 1 s, no more
