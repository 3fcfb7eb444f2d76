"""The visibility sweep: physical fog and water on a metric depth map (docs/methods.md §1-§4).

Modules, in the order of the method: :mod:`~clearsight.sweep.config` (what a run asks for),
:mod:`~clearsight.sweep.conditions` (the arms, levels,
controls and ImageNet-C stacks a scene is rendered under), :mod:`~clearsight.sweep.specs`
(what an item is made of), :mod:`~clearsight.sweep.protocol` (how items are planned, how a
scene's unit runs, the protocol value the driver runs),
:mod:`~clearsight.sweep.readouts` (letter probabilities, verbalized confidence and abstention
read from the stored raw output), :mod:`~clearsight.sweep.equivalence` (ImageNet-C severities on
the metre axis), :mod:`~clearsight.sweep.preview` (contact sheets of the conditions) and
:mod:`~clearsight.sweep.results` (the records read back as the frames a report renders).
"""
