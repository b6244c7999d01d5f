"""Why attention, measured (issue 38): the encoder–decoder bottleneck on a toy translation.

- :mod:`.toy_language`: a 20-word toy language whose translation reverses the word order, its
  seeded sentence generator and the word-by-word translation beside the right one.
- :mod:`.encoder_decoder`: two GRU encoder–decoders of the same width and the same parameters,
  one reading the encoder's final state only, one with dot-product attention over every state.
- :mod:`.bottleneck_training`: the training loop and the measurements (accuracy per length).
- :mod:`.bottleneck_run`: the recorded runs shipped in ``attnviz/models/bottleneck/data/``.
"""
