"""Constrained decoding from the grammar: exports for llguidance, GBNF, xgrammar and Lark."""
