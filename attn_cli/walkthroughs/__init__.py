"""The lessons: each module computes one walkthrough and declares its lesson (LESSON)."""
