"""The engine's floor for tools/bench --scale: the same rows written and read by the sqlite3 shell alone.

Import: after receipt's own manifest import (timed by scale.py), a second vault is made by `receipt
init` (same schema) and its triggers are dropped; the sqlite3 shell then copies the imported vault's
rows into it (ATTACHed, read from the page cache) in the transactions receipt uses: spans of 16,384
receipts (BatchBudget.spanItemsLimit), each with its blob rows, receipts, attachments, outbox entries
and the search index's rows (one INSERT ... SELECT, as the ingest's ledger builds them once per span),
under the same pragmas (WAL, synchronous FULL). No file is read, nothing is hashed, no receipt code
runs: it is what SQLite itself costs for those rows.
list, search, stats, fsck --quick: the statements those commands run, in the sqlite3 shell on the
vault's catalog (read-only). gc: its one statement (the blob rows no attachment names) and a walk of
the blob tree by `find`, without gc's look-up of each file in the catalog (a lower floor than the work).
receipt's figure is then printed as a ratio to the floor's, same run.
"""
import os
import shutil
import sqlite3
import subprocess

SPAN = 16384
# The search index's row of receipts `r` (Sources/ReceiptCatalog/SearchIndex.swift, `document`).
DOCUMENT = """
INSERT INTO receiptSearch(rowid, merchant, category, note, tags, claim, files, body)
SELECT r.rowid, r.merchant, r.category, r.note, r.tags, r.claim,
       (SELECT group_concat(a.filename, ' ') FROM attachments a WHERE a.receiptRow = r.rowid),
       (SELECT group_concat(t.text, ' ') FROM attachments a JOIN blobTextRead t ON t.sha256 = a.sha256
        WHERE a.receiptRow = r.rowid AND t.state = 'text')
FROM receipts r WHERE r.rowid BETWEEN %d AND %d;
"""
LIST = """
SELECT r.id, r.zone, r.merchant, r.date, r.total, r.currency, r.category, r.note, r.tags, r.createdAt,
       r.modifiedAt, r.status, r.claim, r.reimbursedOn, r.rowNumber
FROM receipts r WHERE r.date >= '2021-03-01' AND r.date <= '2021-03-31' AND r.date IS NOT NULL ORDER BY r.date, r.id;
SELECT a.receiptRow, a.sha256, a.filename, a.mediaType, a.size FROM attachments a
WHERE a.receiptRow IN (SELECT rowNumber FROM receipts WHERE date >= '2021-03-01' AND date <= '2021-03-31')
ORDER BY a.receiptRow, a.position;
SELECT receiptRow, extractor, fields FROM receiptReadings
WHERE receiptRow IN (SELECT rowNumber FROM receipts WHERE date >= '2021-03-01' AND date <= '2021-03-31');
"""
SEARCH = """
SELECT s.rowid, r.id, s.score FROM
    (SELECT rowid, bm25(receiptSearch, 5.0, 2.0, 1.0, 2.0, 2.0, 1.5, 1.0) AS score
     FROM receiptSearch WHERE receiptSearch MATCH 'tesco sourdough') s
JOIN receipts r ON r.rowid = s.rowid ORDER BY s.score, r.date DESC, r.id LIMIT 20;
SELECT rowid, snippet(receiptSearch, -1, '[', ']', '…', 12) FROM receiptSearch
WHERE receiptSearch MATCH 'tesco sourdough' AND rowid IN (
    SELECT rowid FROM receiptSearch WHERE receiptSearch MATCH 'tesco sourdough'
    ORDER BY bm25(receiptSearch, 5.0, 2.0, 1.0, 2.0, 2.0, 1.5, 1.0) LIMIT 20);
"""
STATS = """
SELECT receipts, attachments, blobs, externalBlobs, inlineBlobs, logicalBytes, storedBytes, referencedBlobs
FROM keptCounts WHERE one = 1;
SELECT extractor, state, blobs FROM keptTextCounts WHERE blobs <> 0;
"""
GC = """
SELECT sha256, storedSize, inline IS NOT NULL, createdAt FROM blobs b
WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.sha256 = b.sha256) ORDER BY sha256;
"""


def fsck_quick_sql(catalog):
    """fsck --quick's statements (Sources/ReceiptCatalog/Catalog+Check.swift, Catalog+Search.swift,
    KeptCounts.swift): quick_check of each table but the derived ones (extracted text, the search
    index's tables, the texts' signatures), every blob row read, receipt ids of the wrong shape,
    attachments whose blob row is gone, foreign keys, the search index's and the kept counts."""
    with sqlite3.connect("file:%s?mode=ro" % catalog, uri=True) as db:
        tables = [t for (t,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")]
        linked = [t for (t,) in db.execute(
            "SELECT DISTINCT m.name FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table'")]
    derived = lambda t: t in ("blobText", "textSignatures") or t.startswith("receiptSearch_")
    out = ["PRAGMA quick_check(\"%s\");" % t for t in ["sqlite_master"] + tables if not derived(t)]
    out += ["SELECT count(*), sum(size), sum(storedSize), sum(inline IS NOT NULL) FROM blobs;",
            "SELECT count(*) FROM receipts WHERE typeof(id) != 'blob' OR length(id) != 16;",
            "SELECT count(*) FROM attachments a WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = a.sha256);",
            "SELECT DISTINCT receiptID FROM attachments WHERE receiptRow NOT IN (SELECT rowNumber FROM receipts);"]
    # (receipt asks for the zones receipts name that are missing only when a foreign key failed, and
    # looks each blob file's address up in `blobs`: the scale corpus keeps none in files.)
    # As receipt asks them: attachments' and textBands' links by queries (above and below), the rest
    # by the pragma.
    out += ["PRAGMA foreign_key_check(\"%s\");" % t for t in linked if t not in ("attachments", "textBands")]
    if "textBands" in linked:
        out.append("SELECT count(*) FROM textBands b WHERE NOT EXISTS "
                   "(SELECT 1 FROM textSignatures s WHERE s.receiptRow = b.receiptRow);")
    if "receiptSearch_docsize" in tables:
        out += ["SELECT count(*) FROM receipts;", "SELECT count(*) FROM receiptSearch_docsize;",
                "SELECT count(*) FROM receiptSearch_docsize d WHERE NOT EXISTS (SELECT 1 FROM receipts r WHERE r.rowid = d.id);"]
    if "keptCounts" in tables:
        out.append("SELECT * FROM keptCounts; SELECT extractor, state, blobs FROM keptTextCounts WHERE blobs <> 0;")
        out.append("SELECT (SELECT count(*) FROM receipts), (SELECT count(*) FROM attachments), count(*), "
                   "sum(inline IS NULL), sum(inline IS NOT NULL), sum(size), sum(storedSize), "
                   "(SELECT count(DISTINCT sha256) FROM attachments) FROM blobs;")
    return "\n".join(out) + "\n"


def import_script(source, target):
    """The floor's import: `source`'s rows into `target` (a fresh catalog without triggers), span by span."""
    with sqlite3.connect("file:%s?mode=ro" % source, uri=True) as db:
        receipts = db.execute("SELECT coalesce(max(rowNumber), 0) FROM receipts").fetchone()[0]
    spans = max(1, -(-receipts // SPAN))
    out = ["PRAGMA journal_mode = WAL;", "PRAGMA synchronous = FULL;", "PRAGMA foreign_keys = ON;",
           "ATTACH 'file:%s?mode=ro' AS ref;" % source]
    for k in range(spans):
        r0, r1 = k * SPAN + 1, min(receipts, (k + 1) * SPAN)
        out += ["BEGIN;",
                # The span's own blobs (a receipt's attachment may name a blob that an earlier span
                # brought: a duplicate), so every foreign key holds at its commit, as in receipt's spans.
                "INSERT OR IGNORE INTO blobs SELECT * FROM ref.blobs WHERE sha256 IN (SELECT sha256 FROM "
                "ref.attachments WHERE receiptRow BETWEEN %d AND %d) ORDER BY rowid;" % (r0, r1),
                "INSERT INTO receipts SELECT * FROM ref.receipts WHERE rowNumber BETWEEN %d AND %d;" % (r0, r1),
                "INSERT INTO attachments SELECT * FROM ref.attachments WHERE receiptRow BETWEEN %d AND %d;" % (r0, r1),
                "INSERT INTO changes SELECT c.* FROM ref.changes c JOIN ref.receipts r ON r.id = c.receiptID "
                "WHERE r.rowNumber BETWEEN %d AND %d;" % (r0, r1),
                DOCUMENT % (r0, r1),
                "COMMIT;"]
    return "\n".join(out) + "\n"


class Floor:
    """The sqlite3 shell's figures beside receipt's, for one vault size."""

    def __init__(self, bench):
        self.b = bench
        self.sqlite3 = shutil.which("sqlite3")
        if self.sqlite3 is None:
            raise SystemExit("bench --scale: the engine floor needs the sqlite3 shell (apt-get install sqlite3)")

    def shell(self, catalog, sql, tag, readonly=True):
        script = self.b.path("floor-%s.sql" % tag)
        with open(script, "w") as f:
            f.write(sql)
        argv = [self.sqlite3] + (["-readonly"] if readonly else []) + ["-bail", catalog, ".read %s" % script]
        return self.b.run(argv, "sqlite3", out=self.b.path("floor-%s.out" % tag))

    def import_rows(self, n, vault):
        """Times the floor's import of `vault`'s rows into a fresh catalog; returns (s, rss, cpu)."""
        floor = self.b.path("floor-vault-%d" % n)
        subprocess.run(["rm", "-rf", floor])
        self.b.run(self.b.rc(floor, "init", "--compression", "none"), "receipt")
        catalog = os.path.join(floor, "catalog.sqlite")
        with sqlite3.connect(catalog) as db:
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
                db.execute('DROP TRIGGER "%s"' % name)
        try:
            source = os.path.join(vault, "catalog.sqlite")
            figures = self.shell(catalog, import_script(source, catalog), "import-%d" % n, readonly=False)
            if _counts(catalog) != _counts(source):
                raise RuntimeError("the floor's rows differ from the vault's: %s against %s" % (_counts(catalog), _counts(source)))
            return figures
        finally:
            subprocess.run(["rm", "-rf", floor])

    def query(self, step, n, vault):
        catalog = os.path.join(vault, "catalog.sqlite")
        sql = {"list (one month)": LIST, "search": SEARCH, "stats": STATS, "gc (nothing to collect)": GC,
               "fsck --quick": None}[step]
        tag = "%s-%d" % (step.split()[0], n)
        if step.startswith("gc"):
            return self.gc(catalog, os.path.join(vault, "blobs"), tag)
        return self.shell(catalog, sql or fsck_quick_sql(catalog), tag)

    def gc(self, catalog, blobs, tag):
        script = self.b.path("floor-%s.sql" % tag)
        with open(script, "w") as f:
            f.write(GC)
        walk = "%s -readonly -bail %s '.read %s' && find %s -type f" % (self.sqlite3, catalog, script, blobs)
        return self.b.run(["sh", "-c", walk], "sqlite3", out=self.b.path("floor-%s.out" % tag))

    def catalog_bytes(self, vault):
        """The catalog's bytes on disk (file and WAL) and its five largest tables or indexes by dbstat."""
        catalog = os.path.join(vault, "catalog.sqlite")
        size = sum(os.path.getsize(p) for p in (catalog, catalog + "-wal") if os.path.exists(p))
        with sqlite3.connect("file:%s?mode=ro" % catalog, uri=True) as db:
            try:
                top = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 5").fetchall()
            except sqlite3.OperationalError:  # a Python sqlite3 built without SQLITE_ENABLE_DBSTAT_VTAB
                top = []
        return size, top


def _counts(catalog):
    with sqlite3.connect("file:%s?mode=ro" % catalog, uri=True) as db:
        return [db.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
                for t in ("blobs", "receipts", "attachments", "changes", "receiptSearch")]
