"""Test support shared by the tests, the benchmarks and the load test: loopback only."""
