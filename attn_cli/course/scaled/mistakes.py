"""The mistakes a student makes on attn scaled's steps, and each step as the student's own
numbers give it (error carried forward), for the quiz and the marking (attn_cli.course.mistakes)."""

from __future__ import annotations

from attn_cli.course.mistakes import StepMistakes, attention_mistakes

STEPS: dict[str, StepMistakes] = attention_mistakes(
    lambda g: g.input("Q"), lambda g: g.input("K"), lambda g: g.input("V")
)
