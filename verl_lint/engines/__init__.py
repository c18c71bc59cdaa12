"""The inference engines (vLLM, SGLang, vllm-ascend): their releases, the arguments they accept, and how verl assembles them."""
