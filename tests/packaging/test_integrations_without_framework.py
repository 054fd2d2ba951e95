"""Without vLLM or SGLang, their adapters say what they need (the rest of the package imports without
either: test_packaging.py's wheel test)."""

import importlib
import sys

import pytest


@pytest.mark.parametrize("framework, adapter, says", [
    ("vllm", "gemma4_incremental.integrations.vllm", "vLLM adapter (written against vLLM 0.33) and needs vLLM"),
    ("sglang", "gemma4_incremental.integrations.sglang", "SGLang adapter (written against SGLang 0.5.23) and needs SGLang"),
])
def test_an_adapter_without_its_framework_names_it(monkeypatch, framework, adapter, says):
    monkeypatch.setitem(sys.modules, framework, None)
    monkeypatch.delitem(sys.modules, adapter, raising=False)
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module(adapter)
    assert says in str(info.value) and adapter in str(info.value)
    assert info.value.name.split(".")[0] == framework  # what an installer's hint reads
