"""Retrieval evaluation: dataset loaders, metrics, baseline methods, the harness and its reports (no Dagster)."""

from mmkg.eval.datasets import Dataset, DatasetError, MMLongBench, Question, TwoWiki, load_sample
from mmkg.eval.methods import make_methods, parse_methods
from mmkg.eval.runner import DEFAULT_KS, EvalReport, compare, run_eval

__all__ = [
    "DEFAULT_KS", "Dataset", "DatasetError", "EvalReport", "MMLongBench", "Question", "TwoWiki", "compare",
    "load_sample", "make_methods", "parse_methods", "run_eval",
]  # fmt: skip
