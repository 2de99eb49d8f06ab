//! Timing kernels of the host benchmarks (section 4 of the paper); driven from Python.
