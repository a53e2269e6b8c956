"""Packaging beyond what pyproject.toml can say: the top-level `migrations/` folder (where the
`alembic` command and alembic.ini expect it) ships inside the distribution as `fabric.migrations`,
so an installed fabric can migrate without the source tree."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["fabric*", "workers*"]) + ["fabric.migrations", "fabric.migrations.versions"],
    package_dir={"fabric.migrations": "migrations"},
)
