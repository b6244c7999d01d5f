"""Benchmarks: the chapter's attention against other ways of computing the same function."""
