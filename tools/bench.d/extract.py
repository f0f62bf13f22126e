"""Text extraction throughput of `receipt index` on generated receipts (tools/bench's "extract" steps).

Two sets, written once into WORK/extract/ and reused while their parameters are unchanged:
- born-digital: N one-page PDFs with a text layer (pdftotext reads them), the invoices of
  tools/make-fixtures with other merchants, items and totals;
- scanned: M pages that only OCR reads, the receipt photos of tools/make-fixtures (slightly rotated,
  grey paper, speckles, blur): a third JPEG, a third PNG, a third 2-page image-only PDFs (pdftoppm +
  Tesseract).
The drawing code is make-fixtures' own (loaded from tools/make-fixtures, not copied), and the same
seeds give the same bytes. Each set is imported with --no-index into a vault of its own, then the
`receipt index` of that vault is timed: PDFs/s and OCR pages/s with one extractor per core.
Needs Pillow and the DejaVu fonts, as make-fixtures does (installed when missing: pip, fonts-dejavu-core).
"""
import datetime
import importlib.machinery
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys

import corpus

VERSION = 1


class Missing(Exception):
    pass


def fixtures_module():
    """tools/make-fixtures as a module (it has no .py suffix, and runs nothing on import)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "make-fixtures")
    loader = importlib.machinery.SourceFileLoader("make_fixtures", path)
    spec = importlib.util.spec_from_loader("make_fixtures", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def ensure_pillow():
    """Imports make-fixtures; installs the fonts (Debian) and Pillow (pip, for this Python, which may
    not be Debian's) first when they are missing and this runs as root."""
    try:
        mf = fixtures_module()
        if os.path.exists(mf.MONO):
            return mf
    except ImportError:
        pass
    if os.geteuid() != 0:
        raise Missing("needs Pillow and the DejaVu fonts: apt-get install fonts-dejavu-core; "
                      "%s -m pip install Pillow" % sys.executable)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not os.path.isdir("/usr/share/fonts/truetype/dejavu"):
        subprocess.run(["apt-get", "update", "-qq"], env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "fonts-dejavu-core"], env=env)
    try:
        import PIL  # noqa: F401
    except ImportError:
        pip = [sys.executable, "-m", "pip", "install", "-q", "Pillow"]
        if subprocess.run(pip).returncode != 0:
            subprocess.run(pip + ["--break-system-packages"])
    try:
        return fixtures_module()
    except ImportError as e:
        raise Missing("Pillow did not install (%s)" % e)


def receipt_lines(r):
    """A merchant's receipt: heading, date, 2-5 items with amounts, the total."""
    merchant, cur, _, (lo, hi) = r.choice(corpus.MERCHANTS)
    day = datetime.date(2024, 1, 1) + datetime.timedelta(days=r.randrange(366))
    items, total = [], 0
    for _ in range(r.randint(2, 5)):
        cents = r.randint(lo // 4 + 1, hi // 4 + 1)
        total += cents
        items.append("%-22s %9s" % (r.choice(corpus.ITEMS)[:22], corpus.money(cents)))
    return [merchant.upper(), "Receipt %06d  %s" % (r.randrange(10**6), day.isoformat())] + items + [
        "TOTAL %s %19s" % (cur, corpus.money(total))]


def generate(root, pdfs, pages, seed=20260602):
    """Writes root/born-digital/ and root/scanned/ (or reuses them); returns the COMPLETE.json dict."""
    request = {"version": VERSION, "pdfs": pdfs, "pages": pages, "seed": seed}
    marker = os.path.join(root, "COMPLETE.json")
    done = corpus.made_before(marker, request)
    if done:
        return done
    mf = ensure_pillow()
    shutil.rmtree(root, ignore_errors=True)
    digital, scanned = os.path.join(root, "born-digital"), os.path.join(root, "scanned")
    os.makedirs(digital)
    os.makedirs(scanned)
    r = random.Random(seed)
    for i in range(pdfs):
        lines = receipt_lines(r)
        lines.insert(1, "Invoice %d-%04d" % (2024, i))
        mf.write_text_pdf(os.path.join(digital, "invoice-%04d.pdf" % i), lines + ["Paid by card. Thank you."])
    made, n = 0, 0
    while made < pages:
        kind = n % 3
        photo = [mf.receipt_image(receipt_lines(r), seed=seed + 10 * n + k, angle=r.uniform(-1.5, 1.5))
                 for k in range(2 if kind == 2 and pages - made >= 2 else 1)]
        base = os.path.join(scanned, "scan-%03d" % n)
        if kind == 0:
            photo[0].convert("RGB").save(base + ".jpg", "JPEG", quality=80)
        elif kind == 1:
            photo[0].save(base + ".png", "PNG", optimize=True)
        else:
            mf.write_scanned_pdf(base + ".pdf", photo)
        made, n = made + len(photo), n + 1
    done = dict(request, files={"born-digital": pdfs, "scanned": n},
                bytes={d: sum(os.path.getsize(os.path.join(root, d, f)) for f in os.listdir(os.path.join(root, d)))
                       for d in ("born-digital", "scanned")})
    with open(marker, "w") as f:
        json.dump(done, f, indent=1)
    return done


def step(bench, quick):
    """The two timed `receipt index` runs, as rows of the bench's table."""
    pdfs, pages = (60, 9) if quick else (300, 30)
    label = {"born-digital": "index born-digital PDFs (%d)" % pdfs, "scanned": "index OCR pages (%d)" % pages}
    try:
        made = generate(os.path.join(bench.work, "extract"), pdfs, pages)
    except (Missing, OSError) as e:
        for kind in label:
            bench.rows.append({"step": label[kind], "tool": "receipt", "seconds": None, "cpu": None, "rss": None,
                               "disk": None, "note": "n/a: %s" % e})
        return
    for kind, unit, count in (("born-digital", "PDFs", pdfs), ("scanned", "OCR pages", pages)):
        vault = bench.path("vault-" + kind)

        def body(m, kind=kind, vault=vault, unit=unit, count=count):
            bench.need("init", "import", "index")
            m.setup(bench.rc(vault, "init", "--compression", "none"))
            m.setup(bench.rc(vault, "import", os.path.join(bench.work, "extract", kind), "--no-index"))
            out = bench.path("index-%s.json" % kind)
            m.time(bench.rc(vault, "index", "--json"), out=out)
            with open(out) as f:
                result = json.load(f)
            if result.get("failed") or result.get("pending"):
                raise ValueError("index left %s failed and %s pending of %d files (%s)" % (
                    result.get("failed"), result.get("pending"), made["files"][kind], out))
            m.note = "%.2f %s/s on %d cores; %d files extracted" % (
                count / max(m.seconds, 1e-9), unit, os.cpu_count(), result["extracted"])

        bench.measure(label[kind], "receipt", body)
        subprocess.run(["rm", "-rf", vault])


def figures(bench):
    """The target-style line for the results: both rates, or why they are missing."""
    rows = {r["step"].split(" (")[0]: r for r in bench.rows if r["step"].startswith("index ")}
    out = []
    for name, unit in (("index born-digital PDFs", "PDFs/s"), ("index OCR pages", "pages/s")):
        r = rows.get(name)
        n = int(r["step"].rsplit("(", 1)[1].rstrip(")")) if r else 0
        out.append("%s %s" % ("%.2f" % (n / r["seconds"]) if r and r["seconds"] else "–", unit))
    return "- text extraction on %d cores (reported, no target): born-digital %s, OCR %s" % (
        os.cpu_count(), out[0], out[1])


if __name__ == "__main__":
    sys.exit("extract.py is run by tools/bench")
