"""attn: worked examples of the attention mechanism, every intermediate matrix shown."""

__version__ = "0.1.0"
