"""Admin calls name an org that must exist (a typo must not read as "nothing to do")."""

from __future__ import annotations

from typing import TYPE_CHECKING


from ..errors import NotFound
from ..sql import q
from ..types import check_org

if TYPE_CHECKING:
    from ..db import Conn


class UnknownOrg(NotFound):
    """An org that nothing was ever written to."""

    def __init__(self, org: str):
        self.what, self.ident, self.org = "org", org, org
        LookupError.__init__(self, f"no org {org!r}: nothing was ever written to it")


def require_org(conn: Conn, org: str) -> None:
    check_org(org)
    if conn.execute(q("org_exists"), {"org": org}).fetchone() is None:
        raise UnknownOrg(org)
