#!/usr/bin/env python3
"""Deterministic household-receipt corpus for tools/bench (Python 3 stdlib only).

    corpus.py DIR [--profile standard|quick] [--seed N] [--jobs N]
    corpus.py DIR --small --rows N [--seed N] [--jobs N]

Writes DIR/files/YYYY/MM/<name> and DIR/manifest.csv with the columns
path,id,merchant,date,total,currency,category,sha256 (path relative to DIR).
DIR/COMPLETE.json is written last; a DIR whose COMPLETE.json matches the request
is reused as is, anything else in DIR is deleted and generated again.

Profiles (unique files, then 10 % exact duplicates on top, scans never duplicated):
    standard  ~1 GB, ~3,000 files: text/JSON/CSV receipts 1-30 KB, PDF-like 50 KB-2 MB
              (25-75 % compressible text streams, the rest random "image" streams),
              JPEG-like 200 KB-5 MB (random, incompressible), 3 scans of 20-60 MB
    quick     ~50 MB, ~330 files of the same kinds (one 16-20 MB scan)
    --small   N text receipts of 1-4 KB (for the manifest-import benchmark)
The same arguments give byte-identical files, names, mtimes and manifest whatever --jobs is:
every file derives from its own random.Random(seed) and nothing reads the clock.
"""
import argparse
import calendar
import csv
import datetime
import hashlib
import json
import math
import os
import random
import shutil
import sys
import uuid
from multiprocessing import Pool

VERSION = 1
PROFILES = {
    "standard": dict(text=1700, pdf=700, jpeg=300, scan=3, scan_mb=(20, 60), years=(2019, 2024)),
    "quick": dict(text=250, pdf=30, jpeg=10, scan=1, scan_mb=(16, 20), years=(2019, 2024)),
}
SIZES = {"text": (1 << 10, 30 << 10), "small": (1 << 10, 4 << 10), "pdf": (50 << 10, 2 << 20),
         "jpeg": (200 << 10, 5 << 20)}
DUP_FRAC = 0.10
MERCHANTS = [  # name, currency, category, typical amount range in cents
    ("Tesco", "GBP", "groceries", (80, 9000)), ("Lidl", "EUR", "groceries", (80, 9000)),
    ("Whole Foods Market", "USD", "groceries", (120, 15000)), ("REWE", "EUR", "groceries", (80, 9000)),
    ("Apple Store", "USD", "electronics", (1900, 250000)), ("MediaMarkt", "EUR", "electronics", (990, 150000)),
    ("EDF Energy", "GBP", "utilities", (2500, 30000)), ("Vodafone", "EUR", "utilities", (1000, 9000)),
    ("Starbucks", "USD", "dining", (250, 2500)), ("Pret A Manger", "GBP", "dining", (250, 2500)),
    ("IKEA", "EUR", "household", (199, 90000)), ("Home Depot", "USD", "household", (199, 60000)),
    ("Boots", "GBP", "health", (99, 6000)), ("CVS Pharmacy", "USD", "health", (99, 6000)),
    ("Deutsche Bahn", "EUR", "transport", (190, 25000)), ("Shell", "GBP", "transport", (1000, 12000)),
    ("Allianz", "EUR", "insurance", (5000, 180000)), ("HMRC", "GBP", "tax", (5000, 500000)),
    ("Uniqlo", "GBP", "clothing", (990, 15000)), ("H&M", "EUR", "clothing", (499, 9999)),
]
ITEMS = ("milk 2L", "eggs x12", "sourdough loaf", "bananas", "cheddar 400g", "rice 1kg", "olive oil",
         "coffee beans", "USB-C cable", "SSD 1TB", "standing charge", "kWh usage", "flat white",
         "croissant", "bookcase", "LED bulbs 4pk", "ibuprofen", "toothpaste", "unleaded 95", "ticket 2nd class",
         "premium", "admin fee", "payment on account", "t-shirt", "jeans", "socks 5pk", "delivery", "VAT")
WORDS = ("total subtotal vat tax item qty price amount paid card visa contactless auth code terminal store "
         "cashier receipt invoice reference account customer period due date balance statement usage tariff "
         "unit rate payment method change cash discount returns within days original warranty").split()


def log_uniform(r, lo, hi):
    return int(math.exp(r.uniform(math.log(lo), math.log(hi))))


def money(cents):
    return "%d.%02d" % divmod(cents, 100)


def slug(s):
    return "-".join("".join(c if c.isalnum() else " " for c in s.lower()).split())


# ------------------------------------------------------------------ content
def text_receipt(r, meta, size):
    """A receipt of about `size` bytes in meta['fmt']; returns (bytes, total_cents)."""
    lo, hi = meta["range"]
    cur, fmt = meta["currency"], meta["fmt"]
    per_item = {"json": 170, "csv": 60, "txt": 74}[fmt]
    items, body, total = [], 100, 0
    while body < size:
        qty, unit = r.choice((1, 1, 1, 2, 3)), r.randint(lo // 4 + 1, hi // 4 + 1)
        items.append((r.choice(ITEMS), qty, unit, "%06d" % r.randrange(10**6), " ".join(r.choices(WORDS, k=4))))
        total += qty * unit
        body += per_item
    if fmt == "json":
        doc = {"merchant": meta["merchant"], "date": meta["date"], "currency": cur,
               "items": [{"sku": s, "description": d, "qty": q, "unit_price": money(u), "amount": money(q * u),
                          "note": n} for d, q, u, s, n in items],
               "total": money(total), "payment": {"method": r.choice(("visa", "cash", "apple_pay")),
                                                  "auth": "%06X" % r.getrandbits(24)}}
        return json.dumps(doc, indent=1).encode(), total
    if fmt == "csv":
        rows = ["line,sku,description,qty,unit_price,amount,currency,note"]
        rows += ['%d,%s,"%s",%d,%s,%s,%s,%s' % (i, s, d, q, money(u), money(q * u), cur, n)
                 for i, (d, q, u, s, n) in enumerate(items, 1)]
        rows.append(',,"TOTAL",,,%s,%s,' % (money(total), cur))
        return ("\n".join(rows) + "\n").encode(), total
    lines = [meta["merchant"].upper().center(44), meta["date"] + "  %02d:%02d" % (r.randint(7, 21), r.randint(0, 59))]
    lines += ["%-30s%14s" % ("%dx %s" % (q, d), money(q * u) + " " + cur) + "\n  " + n for d, q, u, s, n in items]
    lines += ["%-30s%14s" % ("TOTAL", money(total) + " " + cur), "AUTH %06X" % r.getrandbits(24), ""]
    return "\n".join(lines).encode(), total


def pdf_text_stream(r, n):
    out, got, y = [], 0, 800
    while got < n:
        y = 800 if y < 60 else y - 12
        words = " ".join(r.choices(WORDS, k=r.randint(3, 8)))
        line = "BT /F%d 9 Tf %d %d Td (%s %s) Tj ET" % (r.randint(1, 3), r.randint(36, 90), y, words,
                                                      money(r.randrange(10**6)))
        out.append(line)
        got += len(line) + 1
    return "\n".join(out).encode()[:n]


def pdf_like(r, meta, size, text_frac):
    parts = [b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n", b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n",
             ("2 0 obj\n<< /Title (%s %s) >>\nendobj\n" % (meta["merchant"], meta["date"])).encode()]
    used, text_left, num = sum(map(len, parts)), int(size * text_frac), 3
    while used < size - 100:
        room = size - 100 - used
        if text_left > 0 and (r.random() < 0.5 or room <= text_left):
            body = pdf_text_stream(r, min(text_left, r.randint(8 << 10, 96 << 10), room))
            text_left -= len(body)
            head = b"%d 0 obj\n<< /Length %d >>\nstream\n" % (num, len(body))
        else:
            body = r.randbytes(max(1, min(room - text_left, r.randint(32 << 10, 1 << 20))))
            head = b"%d 0 obj\n<< /Subtype /Image /Filter /DCTDecode /Length %d >>\nstream\n" % (num, len(body))
        obj = head + body + b"\nendstream\nendobj\n"
        parts.append(obj)
        used, num = used + len(obj), num + 1
    parts.append(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (num, used))
    return b"".join(parts)


def jpeg_like(r, size):
    head = (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x48\x00\x48\x00\x00"
            b"\xff\xe1\x00\x16Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08Apple\x00"
            b"\xff\xda\x00\x0c\x03\x01\x00\x02\x11\x03\x11\x00\x3f\x00")
    return head + r.randbytes(max(0, size - len(head) - 2)) + b"\xff\xd9"


# ------------------------------------------------------------------ planning
def plan(counts, scan_mb, years, seed):
    """Returns blobs: dicts with kind, size, seed, meta, files=[(relpath, mtime, id)]."""
    r = random.Random(seed)
    d0, d1 = datetime.date(years[0], 1, 1).toordinal(), datetime.date(years[1], 12, 31).toordinal()
    kinds = [k for k, n in counts.items() for _ in range(n)]
    r.shuffle(kinds)
    blobs, taken = [], set()

    def add_file(blob, day, name):
        stem, ext = name.rsplit(".", 1)
        path, k = "files/%04d/%02d/%s" % (day.year, day.month, name), 2
        while path in taken:
            path, k = "files/%04d/%02d/%s-%d.%s" % (day.year, day.month, stem, k, ext), k + 1
        taken.add(path)
        mtime = calendar.timegm(day.timetuple()) + r.randint(8 * 3600, 20 * 3600)
        blob["files"].append((path, mtime, str(uuid.UUID(int=r.getrandbits(128), version=4))))

    for kind in kinds:
        merchant, cur, cat, rng = r.choice(MERCHANTS)
        day = datetime.date.fromordinal(r.randint(d0, d1))
        meta = {"merchant": merchant, "currency": cur, "category": cat, "date": day.isoformat(), "range": rng}
        if kind in ("text", "small"):
            meta["fmt"] = ext = r.choice(("txt", "txt", "json", "json", "csv"))
            size, doc = log_uniform(r, *SIZES[kind]), r.choice(("receipt", "e-receipt", "order"))
        elif kind == "jpeg":
            ext, size, doc = "jpg", log_uniform(r, *SIZES[kind]), "photo"
        else:
            ext, doc = "pdf", r.choice(("invoice", "bill", "statement", "warranty"))
            size = log_uniform(r, *SIZES["pdf"]) if kind == "pdf" else r.randint(scan_mb[0] << 20, scan_mb[1] << 20)
            meta["text_frac"] = r.uniform(0.25, 0.75) if kind == "pdf" else r.uniform(0.01, 0.04)
            doc = doc if kind == "pdf" else "scan-" + doc
        if kind not in ("text", "small"):
            meta["total"] = r.randint(*rng)
        blob = {"kind": kind, "size": size, "seed": r.getrandbits(64), "meta": meta, "files": []}
        add_file(blob, day, "%s_%s_%s.%s" % (day.isoformat(), slug(merchant), doc, ext))
        blobs.append(blob)
    candidates = [b for b in blobs if b["kind"] != "scan"]
    for j in range(round(len(blobs) * DUP_FRAC / (1 - DUP_FRAC))):
        b = r.choice(candidates)
        day = datetime.date.fromordinal(min(d1, datetime.date.fromisoformat(b["meta"]["date"]).toordinal()
                                            + r.choice((0, 1, 3, 14, 40))))
        stem, ext = b["files"][0][0].rsplit("/", 1)[1].rsplit(".", 1)
        name = r.choice(("%s (%d).%s" % (stem, len(b["files"]), ext), "Scan_%s_%03d.%s" % (
            day.strftime("%Y%m%d"), j % 1000, ext), "%s_forwarded.%s" % (stem, ext)))
        add_file(b, day, name)
    return blobs


def build(job):
    blob, root = job
    r, meta = random.Random(blob["seed"]), blob["meta"]
    total = meta.get("total")
    if blob["kind"] in ("text", "small"):
        data, total = text_receipt(r, meta, blob["size"])
    elif blob["kind"] == "jpeg":
        data = jpeg_like(r, blob["size"])
    else:
        data = pdf_like(r, meta, blob["size"], meta["text_frac"])
    sha = hashlib.sha256(data).hexdigest()
    for path, mtime, _ in blob["files"]:
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
        os.utime(full, (mtime, mtime))
    return [(path, rid, meta, money(total), sha, len(data)) for path, _, rid in blob["files"]]


def made_before(marker, request):
    """The COMPLETE.json dict at marker when it was written for this request, else None."""
    try:
        with open(marker) as f:
            done = json.load(f)
        if {k: done.get(k) for k in request} == request:
            return done
    except (OSError, ValueError):
        pass
    return None


def generate(root, profile="standard", seed=20260601, rows=None, jobs=None):
    """Generates (or reuses) the corpus in root; returns the COMPLETE.json dict."""
    request = {"version": VERSION, "profile": "small" if rows else profile, "seed": seed, "rows": rows}
    marker = os.path.join(root, "COMPLETE.json")
    done = made_before(marker, request)
    if done:
        return done
    tag = os.path.join(root, ".made-by-corpus-py")
    if os.path.isdir(root) and os.listdir(root) and not os.path.exists(tag):
        sys.exit("corpus.py: refusing to replace %s: not empty and not made by corpus.py" % root)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    open(tag, "w").close()
    if rows:
        unique = round(rows * (1 - DUP_FRAC))
        blobs = plan({"small": unique}, None, (2019, 2024), seed)
    else:
        p = PROFILES[profile]
        blobs = plan({k: p[k] for k in ("text", "pdf", "jpeg", "scan")}, p["scan_mb"], p["years"], seed)
    out = []
    with Pool(jobs or os.cpu_count() or 1) as pool:
        work = sorted(blobs, key=lambda b: -b["size"])  # big files first: better balance
        for res in pool.imap_unordered(build, [(b, root) for b in work], chunksize=1 if not rows else 256):
            out.extend(res)
    out.sort()
    with open(os.path.join(root, "manifest.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["path", "id", "merchant", "date", "total", "currency", "category", "sha256"])
        for path, rid, m, total, sha, _ in out:
            w.writerow([path, rid, m["merchant"], m["date"], total, m["currency"], m["category"], sha])
    uniq = {sha: size for *_, sha, size in out}
    kinds = {}
    for b in blobs:
        kinds[b["kind"]] = kinds.get(b["kind"], 0) + len(b["files"])
    done = dict(request, files=len(out), bytes=sum(x[5] for x in out), unique_blobs=len(uniq),
                unique_bytes=sum(uniq.values()), kinds=kinds)
    with open(marker, "w") as f:
        json.dump(done, f, indent=1)
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="standard")
    ap.add_argument("--small", action="store_true", help="small text receipts only (needs --rows)")
    ap.add_argument("--rows", type=int, help="number of manifest rows with --small")
    ap.add_argument("--seed", type=int, default=20260601)
    ap.add_argument("--jobs", type=int)
    a = ap.parse_args()
    if a.small != bool(a.rows):
        ap.error("--small and --rows N go together")
    print(json.dumps(generate(a.dir, a.profile, a.seed, a.rows, a.jobs)))


if __name__ == "__main__":
    sys.exit(main())
