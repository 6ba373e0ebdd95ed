"""The installed package matches the tree: every Python folder is listed in pyproject.toml, and
the data-only folders listed carry package data."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPING = {"mlcir": "mlcir", "mlcir.dialects": "dialects", "mlcir.passes": "passes",
           "mlcir.tools": "tools"}


def test_every_package_folder_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    assert config["tool"]["setuptools"]["package-dir"] == MAPPING
    found = set()
    for package, folder in MAPPING.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]) if rel.parts else package)
    data_only = {package for package in listed - found
                 if package in config["tool"]["setuptools"]["package-data"]
                 and (ROOT / Path(*package.split("."))).is_dir()}
    assert found == listed - data_only, f"unlisted: {found - listed}, missing: {listed - found}"


def test_console_scripts_are_declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert set(config["project"]["scripts"]) == {"mlcir-opt", "mlcir"}
