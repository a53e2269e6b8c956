"""Bound the full-text index's pending list.

With GIN's default fast update, new memories' lexemes wait in a pending list (up to
gin_pending_list_limit, 4 MB) until a vacuum or an insert that overflows it merges them, and every
scan of the index reads the whole list first, whatever the term. The lexical leg scans the index once
per rare query term, so a search paid for the list once per term: on a 20k-memory bench database after
its ingest phase (42 pending pages), 0.46 ms for a term matching 2 rows against 0.12 ms once the list
was merged; at the 4 MB limit (512 pages) that is several milliseconds per term, on every search of a
store that is being written to. A 64 kB list keeps inserts batched and bounds what a scan reads.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER INDEX fabric.ix_memories_search_text SET (gin_pending_list_limit = 64)")
    # what is pending now is merged by the next vacuum or overflowing insert; the bound applies from here


def downgrade() -> None:
    op.execute("ALTER INDEX fabric.ix_memories_search_text RESET (gin_pending_list_limit)")
