"""clearsight: measure whether vision-language models know when they cannot see or cannot know."""

from __future__ import annotations

__version__ = "0.1.0"
