"""The ring lesson: its card, its build (and the processes it starts), its --code programs and
its tour stop."""
