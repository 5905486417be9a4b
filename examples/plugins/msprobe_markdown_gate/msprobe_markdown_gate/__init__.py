"""An example msprobe-core plugin: a Markdown summary and a gate on named ops, through the run-finished hooks."""
