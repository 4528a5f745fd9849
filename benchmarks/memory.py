"""Benchmarks measure peak memory with the same sampler the eval harness's build report uses."""

from mmkg.eval.memory import PeakMemory

__all__ = ["PeakMemory"]
