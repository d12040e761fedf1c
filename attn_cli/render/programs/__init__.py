"""The ``--code`` programs, one module per lesson (named by its ``Lesson(code=...)``): each has
``numpy_program(walkthrough)`` and, where PyTorch has the thing, ``torch_program(walkthrough)``.
The shared shape of masked softmax attention is in attention.py."""
