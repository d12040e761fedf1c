"""The kvcache lesson: its card, its build, its --code program (and its figure, its tour stop)."""
