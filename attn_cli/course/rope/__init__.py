"""The rope lesson: its card, its build, its --code program and its tour stop."""
