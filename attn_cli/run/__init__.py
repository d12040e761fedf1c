"""From a request to a computed walkthrough: the runner and what it uses."""
