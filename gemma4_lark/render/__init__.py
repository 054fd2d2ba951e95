"""Renderers: Python values and messages into Gemma 4 text."""
