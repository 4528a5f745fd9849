"""Prompt templates (``--task``), from ``mmkg.llm.prompts``; the bundled files are this package's ``prompts/``."""

from mmkg.llm.prompts import PROMPTS_DIR, Template, load_template, tasks

__all__ = ["PROMPTS_DIR", "Template", "load_template", "tasks"]
