"""The inference engines (vLLM, SGLang, vllm-ascend): which releases a launch runs with (versions),
what each release accepts (schemas), and how verl assembles their arguments (assembly, its
conditions decided by expressions). pysource and wheels read packages without importing them."""
