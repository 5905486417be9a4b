"""The msprobe command line."""
