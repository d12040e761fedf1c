"""`attn learn TASK`: small models trained on the spot, their attention shown as it emerges.

One module per task, ``attn_cli/learn/<task>.py``, found by name (attn_cli.learn.tasks imports
``attn_cli.learn.<task>`` when it is asked for; nothing lists the tasks but the command's choice
and that module). Each ends with
its declaration, ``TASK = Task(...)`` (:class:`attn_cli.learn.common.Task`, as a lesson's
``LESSON = Lesson(...)``): its texts, ``run(options, progress)`` returning a Walkthrough
recorded with the lessons' step recorder, and ``program(options)`` (the text of ``--code``,
from ``<task>_program.py``). The lessons' renderers show the walkthrough, --plot's figure
included. The shared machinery (options, seeding and determinism, the progress callback, safe
save and load, the recorder) is in :mod:`attn_cli.learn.common`. Data generators are numpy-only
modules (``<task>_data.py``), so they are tested without torch; the modules that train import
torch.
"""
