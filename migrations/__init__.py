"""The Alembic scripts. Installed as the package `fabric.migrations` (see setup.py); the `alembic`
command and alembic.ini use this folder as it is."""
