"""The DRAM simulator's Python API."""
