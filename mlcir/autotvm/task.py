"""``autotvm.task``: TVM's namespace of tasks (:mod:`.template`: ``create``, ``Task``; and
:mod:`.program`: ``extract_from_program``)."""

from __future__ import annotations

from .program import extract_from_program
from .template import TASK_TABLE, Task, TemplateError, create, get_config_entity, template

__all__ = ["TASK_TABLE", "Task", "TemplateError", "create", "extract_from_program",
           "get_config_entity", "template"]
