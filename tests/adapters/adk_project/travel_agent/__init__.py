from . import agent  # noqa: F401 - `adk eval` and `adk:` targets find root_agent through this module
