"""AutoTVM in mlcir: schedule templates with config spaces, and tuners that search them.

TVM's AutoTVM Python interface on mlcir's TE and schedules (the guide's AutoTVM chapters carry
over): ``@autotvm.template(name)`` and ``autotvm.get_config()`` (:mod:`.template`,
:mod:`.dispatcher`), knobs and config spaces (:mod:`.space`), ``autotvm.task.create``,
tuners (:mod:`.tuner`), measurement by mlcir's isolated builder and runner (:mod:`.measure`),
callbacks (:mod:`.callback`) and records with ``apply_history_best`` and conversion to mlcir's
tuning database (:mod:`.record`). docs/autotvm.md is the guide.
"""

from __future__ import annotations

from . import callback, record, task, transform_view, tuner
from .dispatcher import ApplyConfig, DispatchContext, FallbackContext, get_config
from .measure import (LocalBuilder, LocalRunner, MeasureErrorNo, MeasureInput, MeasureResult,
                      measure_option)
from .record import apply_history_best
from .space import ConfigEntity, ConfigError, ConfigSpace, FallbackConfigEntity
from .template import Task, TemplateError, template

__all__ = ["ApplyConfig", "ConfigEntity", "ConfigError", "ConfigSpace", "DispatchContext",
           "FallbackConfigEntity", "FallbackContext", "LocalBuilder", "LocalRunner",
           "MeasureErrorNo", "MeasureInput", "MeasureResult", "Task", "TemplateError",
           "apply_history_best", "callback", "get_config", "measure_option", "record", "task",
           "template", "transform_view", "tuner"]
