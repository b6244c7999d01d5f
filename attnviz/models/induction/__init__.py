"""Grow an induction head from the chapter's own ``MultiHeadAttention`` (issue 24).

- :mod:`.model`: two layers of the chapter's module with embeddings, residual adds and an
  unembedding (and the one-layer control); a forward that records every head and can zero one.
- :mod:`.train`: the repeat task, the held-out measurements and the training loop (a generator).
- :mod:`.recorded`: the reference run shipped in ``attnviz/models/induction/data/``, read once.
- :mod:`.api`: what the growing page calls (curves, maps, ablation, control, live training).
- :mod:`.passes`: the trained weights in the chapter's modules for passes 2–4.

The head scores come from :mod:`attnviz.models.detectors`, the same ones that label GPT-2's heads.
"""
