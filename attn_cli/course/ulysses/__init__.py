"""The Ulysses lesson: sequence shards turned into head shards by all-to-alls, on the ring's
processes; its card, its build, its processes' program and its tour stop."""
