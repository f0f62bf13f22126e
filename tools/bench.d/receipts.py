"""How well `receipt` reads real receipts (tools/bench --receipts DIR).

DIR is a folder of receipt images with their ground truth, in one of two layouts:
- SROIE's: DIR/img/NNN.jpg, DIR/key/NNN.json ({"company", "date", "total"}) and DIR/box/NNN.csv (each
  text line, after 8 box coordinates), as in the public ICDAR 2019 SROIE mirrors;
- receipt's own: DIR/*.png|jpg and DIR/truth.json ({file: {"merchant", "date", "total", "currency"}}),
  as Fixtures/read.
The images are imported with --no-index into a fresh vault and `receipt index` is timed; plain
`tesseract IMAGE -` (its defaults: what receipt ran before it read receipts) is timed on the same
images beside it, one process per core in both. Printed: words read (the share of the ground truth's
words, case-folded and stripped of surrounding punctuation, found in the extracted text), found by
total (`receipt search TOTAL` returns it), found by shop name (`receipt search` of the first two words
of the shop's name returns it), and per field filled right / filled wrong / suggested right /
suggested wrong / blank. A merchant is right when its letters and digits, upper-cased, are within 20 %
edit distance of the truth's (OCR's misread letters and the truth's own typos count once each).
"""
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import time

MONTHS = {m: i + 1 for i, m in enumerate(["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"])}


def load(folder):
    """[(image path, truth {merchant, date, total, currency?}, words or None)] in file order."""
    items = []
    if os.path.isdir(os.path.join(folder, "img")):
        for image in sorted(glob.glob(os.path.join(folder, "img", "*.jpg"))):
            stem = os.path.splitext(os.path.basename(image))[0]
            key = os.path.join(folder, "key", stem + ".json")
            if not os.path.exists(key):
                continue
            with open(key, encoding="utf-8", errors="replace") as f:
                k = json.load(f)
            words = None
            box = os.path.join(folder, "box", stem + ".csv")
            if os.path.exists(box):
                with open(box, encoding="utf-8", errors="replace") as f:
                    words = [w for line in f for w in normal_words(",".join(line.rstrip("\n").split(",")[8:]))]
            items.append((image, {"merchant": k.get("company"), "date": iso_date(k.get("date", "")),
                                  "total": k.get("total")}, words))
    else:
        with open(os.path.join(folder, "truth.json")) as f:
            truth = json.load(f)
        for name in sorted(truth):
            items.append((os.path.join(folder, name), truth[name], None))
    return items


def normal_words(text):
    return [w for w in (t.strip(".,:;!?()[]{}'\"*#|-").lower() for t in text.split()) if w]


def iso_date(text):
    """The truth's printed date as YYYY-MM-DD: day first unless that is impossible (these are Malaysian)."""
    text = text.strip().upper()
    m = re.match(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$", text)
    if m:
        return "%04d-%02d-%02d" % (int(m[1]), int(m[2]), int(m[3]))
    m = re.match(r"^(\d{1,2})[-/. ]([A-Z]{3})[A-Z]*[-/. ,]*(\d{2,4})$", text)
    if m and m[2] in MONTHS:
        y = int(m[3]) + (2000 if len(m[3]) == 2 else 0)
        return "%04d-%02d-%02d" % (y, MONTHS[m[2]], int(m[1]))
    m = re.match(r"^(\d{1,2})[-/.](\d{1,2})[-/.](\d{2,4})$", text)
    if m:
        a, b, y = int(m[1]), int(m[2]), int(m[3]) + (2000 if len(m[3]) == 2 else 0)
        day, month = (a, b) if b <= 12 else (b, a)
        return "%04d-%02d-%02d" % (y, month, day)
    m = re.match(r"^((?:19|20)\d{2})(\d{2})(\d{2})$", text)
    if m and 1 <= int(m[2]) <= 12 and 1 <= int(m[3]) <= 31:
        return "%s-%s-%s" % (m[1], m[2], m[3])
    m = re.match(r"^(\d{2})(\d{2})(\d{4})$", text)
    if m:
        return "%s-%s-%s" % (m[3], m[2], m[1])
    return None


def amount(text):
    digits = re.sub(r"[^0-9.]", "", text or "")
    try:
        return round(float(digits), 2) if digits else None
    except ValueError:
        return None


def similar(a, b):
    a, b = [re.sub(r"[^A-Z0-9]", "", (x or "").upper()) for x in (a, b)]
    if not a or not b:
        return False
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[-1] <= 0.2 * max(len(a), len(b))


def same(field, got, want):
    if field == "total":
        return amount(got) is not None and amount(got) == amount(want)
    if field == "merchant":
        return similar(got, want)
    return (got or "").upper() == (want or "").upper()


def run(receipt, folder, work, locale=None, log=print):
    items = load(folder)
    if not items:
        raise SystemExit("bench --receipts: no images with ground truth in %s (see tools/bench --help)" % folder)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    vault = os.path.join(work, "vault")
    env = dict(os.environ, RECEIPT_VAULT=vault)

    def rc(*args, check=True):
        p = subprocess.run([receipt, *args], env=env, capture_output=True, text=True)
        if check and p.returncode not in (0, 1):
            raise SystemExit("bench --receipts: receipt %s failed: %s" % (" ".join(args), p.stderr.strip()))
        return p

    rc("init")
    if locale:
        rc("config", "locale", locale)
    inbox = os.path.join(work, "in")
    os.makedirs(inbox)
    for image, _, _ in items:
        shutil.copyfile(image, os.path.join(inbox, os.path.basename(image)))  # import follows no symbolic link
    if rc("import", inbox, "--no-index").returncode != 0:
        raise SystemExit("bench --receipts: some images did not import (see receipt import %s)" % inbox)
    log("receipts: %d images; OCR by receipt index and by plain tesseract, side by side" % len(items))
    t0 = time.monotonic()
    rc("index")
    ours = time.monotonic() - t0
    t0 = time.monotonic()
    images = [os.path.join(inbox, os.path.basename(image)) for image, _, _ in items]
    subprocess.run(["xargs", "-0", "-P", str(os.cpu_count() or 1), "-I{}", "env", "OMP_THREAD_LIMIT=1", "tesseract", "{}", "-"],
                   input="\0".join(images), text=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = time.monotonic() - t0
    listed = json.loads(rc("list", "--json").stdout)
    by_file = {r["attachments"][0]["filename"]: r for r in listed if r["attachments"]}
    counts = collections.defaultdict(collections.Counter)
    words_found = words_total = 0
    for image, truth, words in items:
        r = by_file.get(os.path.basename(image))
        if r is None:
            counts["missing"]["receipts"] += 1
            continue
        if words:
            texts = json.loads(rc("show", r["id"], "--text", "--json").stdout)
            have = collections.Counter(w for t in texts for w in normal_words(t.get("text") or ""))
            want = collections.Counter(words)
            words_found += sum(min(n, have[w]) for w, n in want.items())
            words_total += sum(want.values())
        if truth.get("total"):
            hits = json.loads(rc("search", "--json", "--", "%.2f" % amount(truth["total"])).stdout or "[]")
            counts["search"]["by total"] += any(h["id"] == r["id"] for h in hits)
            counts["search"]["with total"] += 1
        name = [w for w in re.findall(r"[A-Za-z0-9]+", truth.get("merchant") or "") if len(w) >= 2][:2]
        if name:
            hits = json.loads(rc("search", "--json", *name).stdout or "[]")
            counts["search"]["by name"] += any(h["id"] == r["id"] for h in hits)
            counts["search"]["with name"] += 1
        for field in ("merchant", "date", "total", "currency"):
            want = truth.get(field)
            if not want:
                continue
            got, kind = r.get(field), "filled"
            if field not in r.get("filled", []):
                s = (r.get("suggestions") or {}).get(field)
                got, kind = (s["value"], "suggested") if s else (None, "blank")
            verdict = "blank" if got is None else kind + (" right" if same(field, got, want) else " wrong")
            counts[field][verdict] += 1
            counts[field]["all"] += 1
    return format_results(items, counts, words_found, words_total, ours, base, folder, locale)


def format_results(items, counts, words_found, words_total, ours, base, folder, locale):
    def pct(n, d):
        return "%.1f %%" % (100.0 * n / d) if d else "-"
    s = counts["search"]
    lines = ["Folder: %s (%d receipts)%s." % (folder, len(items), ", locale " + locale if locale else ""), "",
             "| measure | value |", "|---|---:|",
             "| words read | %s (%d of %d) |" % (pct(words_found, words_total), words_found, words_total),
             "| found by total | %s |" % pct(s["by total"], s["with total"]),
             "| found by shop name | %s |" % pct(s["by name"], s["with name"]),
             "| OCR seconds per receipt, receipt index | %.2f |" % (ours / len(items)),
             "| OCR seconds per receipt, plain tesseract | %.2f |" % (base / len(items)),
             "| ratio | %.2f× |" % (ours / base if base else 0), "",
             "| field | filled right | filled wrong | suggested right | suggested wrong | blank |",
             "|---|---:|---:|---:|---:|---:|"]
    for field in ("merchant", "date", "total", "currency"):
        c = counts[field]
        if c["all"]:
            lines.append("| %s | %s | %s | %s | %s | %s |" % (field, *(pct(c[k], c["all"]) for k in (
                "filled right", "filled wrong", "suggested right", "suggested wrong", "blank"))))
    return "\n".join(lines) + "\n"
