"""Device memory: device arrays, pinned host memory, transfers and the device memory pools."""
