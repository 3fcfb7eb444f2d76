"""Model backends by name, imported lazily: a GPU library loads only when its backend is used.

Names: ``observer`` (the reference observer, no weights), ``scripted:<file.jsonl>`` (replays
recorded outputs, for tests), and the real backends added by their modules' registration
(``hf:<id-or-path>``, ``vllm:<id>``, ``openai:<base_url>#<model>``), and ``guard:<model>``,
any of them behind the visibility guard (:mod:`clearsight.guard`).
"""

from __future__ import annotations

from clearsight.models.base import (
    Backend,
    Capabilities,
    Decoding,
    ImagePart,
    Message,
    PartialBatchError,
    Request,
    RequestFailedError,
    Response,
    TextPart,
    TokenLogprob,
    require,
)
from clearsight.models.extras import install_hint
from clearsight.models.registry import (
    backend_names,
    load_backend,
    register_backend,
    shared_backend,
    split_model_spec,
)

__all__ = [
    "Backend",
    "Capabilities",
    "Decoding",
    "ImagePart",
    "Message",
    "PartialBatchError",
    "Request",
    "RequestFailedError",
    "Response",
    "TextPart",
    "TokenLogprob",
    "backend_names",
    "install_hint",
    "load_backend",
    "register_backend",
    "require",
    "shared_backend",
    "split_model_spec",
]
