"""assay-hello: a third-party assay plugin with one tool and one resource.

Install it (``pip install ./examples/plugin-hello``) and ``assay plugins``
lists it; ``assay tool call greet --args '{"name": "Ada"}'`` calls it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from assay import Resource, ResourceType, hookimpl, tool


@tool
def greet(name: str, times: Annotated[int, Field(ge=1, le=5)] = 1) -> str:
    """Greet someone by name.

    Args:
        name: Who to greet.
        times: How many times to say hello (1-5).
    """
    return " ".join([f"Hello, {name}!"] * times)


class HelloGuide(Resource):
    """Knowledge the model gets in its system prompt."""

    name = "hello_guide"
    type = ResourceType.KNOWLEDGE

    def get_prompt(self, budget=None) -> str:
        return "Use the greet tool to say hello; it never fails for names up to 100 characters."


@hookimpl
def register_tools(register):
    register(greet)


@hookimpl
def register_resources(register):
    register(HelloGuide())
