"""attn explore: a lesson's inputs as editable tables, its options as controls, and its
walkthrough's steps below, recomputed on every edit (Textual; the explore extra).

:mod:`attn_cli.explore.state` holds what the screen shows, as plain data (no Textual);
:mod:`attn_cli.explore.app` is the Textual app, imported only by `attn explore`.
"""
