"""The host runtime: a real asynchronous copy engine, IPC between processes, and host benchmarks."""
