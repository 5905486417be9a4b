"""The run: every job of a compare through the stages, locally or on an executor."""
