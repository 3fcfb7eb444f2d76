"""The papers' datasets as the Hugging Face hub ships them.

:mod:`~clearsight.datasets.hub` holds the registry: for every dataset the papers use, the hub
repository, config, split and files followed, and one small mapping of its columns onto a
question, its options, its gold answer and its image (with the card revision and the harness
code it was checked against). :mod:`~clearsight.datasets.snapshot` finds a split's files in a
snapshot folder, the hub cache or the ``datasets`` cache and refuses, in one line, a schema
that is not the one the mapping follows; :mod:`~clearsight.datasets.rows` reads the rows into
:class:`~clearsight.datasets.rows.HubRow` s (a row whose gold is not among its options is
refused by id); :mod:`~clearsight.datasets.fetch` downloads and verifies snapshots (and COCO
val2017). The probe (:mod:`clearsight.probe.sources.hub`) and trajectory grounding
(:mod:`clearsight.grounding.problems.hub`) turn rows into their own records.
"""

from __future__ import annotations
