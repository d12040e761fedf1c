"""`attn learn TASK`: small models trained on the spot, their attention shown as it emerges.

One module per task, ``attn_cli/learn/<task>.py``, found by name (the command imports
``attn_cli.learn.<task>``; nothing lists the tasks but the command's choice). Each exposes what
:class:`attn_cli.learn.common.TaskModule` describes: ``run(options, progress)`` returning a
Walkthrough, ``program(options)`` (the text of ``--code``) and ``figure(walkthrough)`` (the
figure of ``--plot``). The shared machinery (options, seeding and determinism, the progress
callback, safe save and load, the lesson texts with their claims, the budget error) is in
:mod:`attn_cli.learn.common`. Data generators are numpy-only modules (``<task>_data.py``), so
they are tested without torch; the modules that train import torch.
"""
