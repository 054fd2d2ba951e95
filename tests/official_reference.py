"""The official chat templates rendered with jinja2, as the reference for render.official."""

import functools

import pytest

from conftest import shared_file

TEMPLATES = {"e2b": "gemma4-e2b-2026-07.jinja", "31b": "gemma4-31b-2026-07.jinja"}


@functools.lru_cache(maxsize=None)
def template(variant):
    jinja2 = pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = raise_exception
    return env.from_string(shared_file("gemma4-templates", TEMPLATES[variant]).read_text(encoding="utf-8"))


def render_reference(messages, tools=None, *, variant="e2b", **options):
    kwargs = {"messages": messages, "bos_token": "<bos>", **options}
    if tools is not None:
        kwargs["tools"] = tools
    return template(variant).render(**kwargs)
