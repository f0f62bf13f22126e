"""The web view in a real browser: headless Chromium through chromedriver (selenium), against the real
`receipt server run` on 127.0.0.1 with four accounts (owner olga, write member walt, read member
rita, outsider otto), all checks on one server in this order:

- roles.py: what each role sees and may do, search, thumbnails, a browser upload reaching a vault,
  a cross-site post refused, a read member's claim package, an outsider's guesses;
- claims.py: phone (320x640, 390x844) and desktop (1280x800) sizes without sideways scroll, with
  thumbnails and the upload control in the first screen; the claim workflow (bulk change by the
  owner, refused for a read member; a claim package whose SHA256SUMS verifies; previous/next); a
  multi-line note and a 4-decimal total surviving a save;
- review.py: the review queue at the three sizes (a field accepted, the next receipt shown);
- roles.sessions: a revoked session ends, failed sign-ins are slowed down (last: it slows rita).

With --database, the server's catalog is in that PostgreSQL database. Screenshots of every page go
to .build/web-shots/. Exit 0 when every check passed; 1 with the failing check otherwise; a missing
Chromium, chromedriver or selenium is a failure, never a skip.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import claims  # noqa: E402
import review  # noqa: E402
import roles  # noqa: E402
from driver import Web, fail  # noqa: E402

USAGE = "usage: tools/web-browser-test RECEIPT_BINARY [--database postgres://USER@HOST:PORT/DB]"


def main():
    if "--help" in sys.argv or "-h" in sys.argv:
        print(USAGE + "\n\n" + __doc__)
        return
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--database"):
        fail(USAGE)
    web = Web(os.path.abspath(sys.argv[1]), sys.argv[2:4], ("olga", "walt", "rita", "otto"))
    try:
        roles.run(web)
        claims.run(web)
        review.run(web)
        roles.sessions(web)
        print("all web view checks passed", flush=True)
    finally:
        web.close()


if __name__ == "__main__":
    main()
