"""pinlint: find and fix host-memory-type mistakes in CUDA Python code."""

__version__ = "0.1.0"
