"""Lesson files: the TOML a lecturer edits (a lesson's words and worked examples), and the code
that reads, checks and describes it.

- ``grammar``: the file's structure, as pydantic models (tables, keys, what each holds);
- ``loader``: reading a file into a LessonFile, checked against the grammar and the lesson;
- ``texts``: what a lesson declares of its words (step and note keys, placeholders, claims);
- ``templates``: filling a text's ``{placeholders}`` at a precision;
- ``schema``: the JSON Schema of the files, generated from the above.
"""
