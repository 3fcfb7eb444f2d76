"""YAML a user gives (a ``--config`` file), read within bounds.

PyYAML's safe loader shares an aliased node instead of copying it, so a "billion laughs" file
of nine lines loads at once into a tree that is small in memory but astronomically large to
walk: any later walk over it (the credential scan, validation) never ends. And it composes
nested collections by recursion, so a deeply nested file is a ``RecursionError``.
:func:`load_yaml` refuses both while the document is composed, before anything walks it:

* the nodes brought in through aliases, counted as the tree they expand to, may add up to
  :data:`MAX_ALIASED_NODES`;
* collections may nest :data:`MAX_DEPTH` deep.

Either refusal is a :class:`yaml.YAMLError` with the line and column where it happened, like
any other YAML error; so is a scalar its tag cannot read (a date ``2001-02-30``), which the
safe loader raises as a bare ``ValueError``.
"""

from __future__ import annotations

from typing import Any, Final, cast

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.error import Mark
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.scanner import ScannerError

__all__ = ["MAX_ALIASED_NODES", "MAX_DEPTH", "load_yaml"]

#: Most nodes that aliases may bring into a document, each alias counted as the whole tree it
#: stands for (a configuration that reuses a block a few times stays far below it).
MAX_ALIASED_NODES: Final = 10_000
#: Deepest nesting of collections (a run's configuration nests five or six levels).
MAX_DEPTH: Final = 100


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, counting while it composes (see the module docstring)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliased = 0
        #: Nodes each composed collection expands to (by ``id``; the tree keeps them alive).
        self._sizes: dict[int, int] = {}

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        """Open a ``[`` or ``{`` collection, refusing one nested past :data:`MAX_DEPTH` (the
        scanner's work grows with the square of the depth of flow collections)."""
        if self.flow_level >= MAX_DEPTH:
            raise ScannerError(
                None, None, f"collections nested more than {MAX_DEPTH} deep", self.get_mark()
            )
        super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        """Compose one node, refusing alias expansion and nesting past the bounds."""
        event = self.peek_event()  # type: ignore[no-untyped-call]  # PyYAML's stubs
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            self._aliased += self._sizes.get(id(node), 1)
            if self._aliased > MAX_ALIASED_NODES:
                raise ComposerError(
                    None,
                    None,
                    f"aliases expand to more than {MAX_ALIASED_NODES} nodes (an alias bomb?)",
                    cast("Mark", event.start_mark),
                )
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise ComposerError(
                None,
                None,
                f"collections nested more than {MAX_DEPTH} deep",
                cast("Mark", event.start_mark),
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, SequenceNode | MappingNode):
            self._sizes[id(node)] = 1 + sum(self._sizes.get(id(c), 1) for c in _children(node))
        return node

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        """Construct one value; a scalar its tag cannot read (``2001-02-30``, ``!!int x``)
        is a :class:`yaml.YAMLError` at its line and column, not a ``ValueError``."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(
                None, None, f"cannot read the value: {exc}", node.start_mark
            ) from None


def _children(node: SequenceNode | MappingNode) -> list[Node]:
    """The nodes directly inside a collection (a mapping's keys and values)."""
    if isinstance(node, SequenceNode):
        return list(node.value)
    return [part for pair in node.value for part in pair]


def load_yaml(text: str) -> Any:
    """The one document in ``text``, as :func:`yaml.safe_load` reads it, within the bounds of
    the module docstring (:class:`yaml.YAMLError` past them)."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
