"""Models beyond the book: GPT-2's weights, the induction run (page 8), the toy training
tasks (page 5), head detectors, and the implementations raced on page 6."""
