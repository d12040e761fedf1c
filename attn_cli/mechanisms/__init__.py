"""The math of each mechanism, written once over an array namespace (numpy or torch).

Modules here compute and return arrays: they never print, parse or format.
"""
