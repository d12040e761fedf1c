"""GPU kernels that follow a lesson step by step (optional: ``pip install 'attn-cli[kernel]'``).

Nothing here is imported unless asked for: a kernel module imports triton and torch at module
level. `attn flash --kernel` reads a kernel's source as text (attn_cli/lessonfiles/kernel_source.py), so
showing it needs neither.
"""
