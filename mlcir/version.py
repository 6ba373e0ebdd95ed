"""The version of mlcir, in one place: ``pyproject.toml`` reads it (setuptools' dynamic
``attr``), :mod:`mlcir` re-exports it, and saved models record it (without importing the
package from inside it)."""

__version__ = "0.1.0"
