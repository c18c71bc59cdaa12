"""The caching allocator (CUDA, Ascend NPU): its settings, and what verl and torch do with them."""
