"""PyTorch dumps for msprobe-core: reads ``.pt`` tensors without torch and without running pickles."""

__version__ = "0.1.0"
