"""tools/bench --scale: how each command's cost grows with a vault of 10,000 to 1,000,000 receipts.

One corpus of small (1-4 KB) text receipts is generated for the largest size (corpus.py --small);
each smaller size imports an evenly spaced subset of its manifest (every k-th row, so dates spread
over all six years at every size). For each size: `init --compression none`, then timed under
/usr/bin/time -v: the manifest import, `list` of one month, `index` (text extraction, for search),
`search`, `stats`, `fsck --quick`, `fsck`, `gc` with nothing to collect, and a one-edit `sync`
(after an untimed first sync that pushes the whole vault to a server on 127.0.0.1).
Import, list, search, stats, fsck --quick and gc are each followed by the engine's floor (floor.py: the
sqlite3 shell alone on the same rows) and their ratio to it is printed (issue 35), with the catalog's
bytes after indexing and its largest tables (compare two binaries' runs with --receipt).
Prints a table of seconds and peak RSS per command and size, with each figure's growth between the
two largest sizes, and checks the targets of issue 17.
"""
import csv
import json
import os
import platform
import socket
import subprocess
import time

import corpus
import floor

MB = 1e6
STEPS = ["import --manifest", "list (one month)", "index", "search", "stats", "fsck --quick", "fsck",
         "gc (nothing to collect)", "sync (first, whole vault)", "sync (one edit)"]
# The sqlite3 shell alone on the same rows (floor.py), and the ratio issue 35 asks of each.
FLOORED = {"import --manifest": 1.3, "list (one month)": 1.5, "search": 1.5, "stats": 1.5, "fsck --quick": 1.5,
           "gc (nothing to collect)": 1.5}
# Best of 3 for the commands that take a fraction of a second: one slow run on a shared machine says
# more about the machine than about the command.
REPEATED = {"list (one month)", "search", "stats", "gc (nothing to collect)", "sync (one edit)"} | {"floor: " + s for s in FLOORED if s != "import --manifest"}
TARGETS = {"list (one month)": 0.1, "search": 0.1, "stats": 0.1, "fsck --quick": 10, "gc (nothing to collect)": 10,
           "sync (one edit)": 0.05}


def subset(root, rows, n):
    """Writes root/manifest-N.csv: every (rows/n)-th row of root/manifest.csv; returns its path."""
    path = os.path.join(root, "manifest-%d.csv" % n)
    if os.path.exists(path):
        return path
    step = max(1, rows // n)
    with open(os.path.join(root, "manifest.csv"), newline="") as f, open(path + ".tmp", "w", newline="") as out:
        r, w = csv.reader(f), csv.writer(out, lineterminator="\n")
        w.writerow(next(r))
        written = 0
        for i, row in enumerate(r):
            if i % step == 0 and written < n:
                w.writerow(row)
                written += 1
    os.replace(path + ".tmp", path)
    return path


class Scale:
    def __init__(self, bench, sizes, skip=()):
        self.b, self.sizes, self.cells, self.skip = bench, sizes, {}, set(skip)  # cells: (step, size) -> (s, rss, cpu) or note
        self.catalog = {}  # size -> the catalog's bytes after import and index
        self.floor = floor.Floor(bench)

    def cell(self, step, n, body):
        try:
            runs = [body() for _ in range(3 if step in REPEATED else 1)]
            self.cells[step, n] = min(runs)
            s, rss, cpu = self.cells[step, n]
            self.b.log("%-26s %9d rows %9.3f s %6.0f MB %9.3f s CPU" % (step, n, s, rss / MB, cpu))
        except Exception as e:  # noqa: BLE001 - a failed cell is reported, the run goes on
            self.cells[step, n] = "FAILED: %s" % e
            self.b.log("%-26s %9d rows FAILED: %s" % (step, n, e))

    def run_size(self, n, manifest):
        b, timeout = self.b, self.b.a.timeout
        vault = b.path("vault-%d" % n)
        b.run(b.rc(vault, "init", "--compression", "none"), "receipt")
        self.cell("import --manifest", n, lambda: b.run(
            b.rc(vault, "import", "--manifest", manifest, "--no-index"), "receipt", timeout=timeout))
        self.cell("floor: import --manifest", n, lambda: self.floor.import_rows(n, vault))
        self.cell("list (one month)", n, lambda: b.run(
            b.rc(vault, "list", "--from", "2021-03-01", "--to", "2021-03-31"), "receipt", out=b.path("list.txt")))
        self.cell("floor: list (one month)", n, lambda: self.floor.query("list (one month)", n, vault))
        if "index" in self.skip:
            self.cells["index", n] = self.cells["search", n] = "skipped (--skip index)"
        else:
            self.cell("index", n, lambda: b.run(b.rc(vault, "index", "--json"), "receipt", timeout=timeout))
            self.cell("search", n, lambda: b.run(
                b.rc(vault, "search", "tesco", "sourdough", "--limit", "20", "--json"), "receipt", out=b.path("search.json")))
            self.cell("floor: search", n, lambda: self.floor.query("search", n, vault))
        size, top = self.floor.catalog_bytes(vault)
        self.catalog[n] = size
        b.log("catalog %d rows: %s bytes; largest: %s" % (n, "{:,}".format(size), ", ".join(
            "%s %.1f MB" % (name, pages / MB) for name, pages in top)))
        self.cell("stats", n, lambda: b.run(b.rc(vault, "stats", "--json"), "receipt"))
        self.cell("floor: stats", n, lambda: self.floor.query("stats", n, vault))
        self.cell("fsck --quick", n, lambda: b.run(b.rc(vault, "fsck", "--quick"), "receipt", timeout=timeout))
        self.cell("floor: fsck --quick", n, lambda: self.floor.query("fsck --quick", n, vault))
        self.cell("fsck", n, lambda: b.run(b.rc(vault, "fsck"), "receipt", timeout=timeout))
        self.cell("gc (nothing to collect)", n, lambda: b.run(b.rc(vault, "gc"), "receipt", timeout=timeout))
        self.cell("floor: gc (nothing to collect)", n, lambda: self.floor.query("gc (nothing to collect)", n, vault))
        if "sync" in self.skip:
            self.cells["sync (first, whole vault)", n] = self.cells["sync (one edit)", n] = "skipped (--skip sync)"
        else:
            self.sync(n, vault)
        if not getattr(b.a, "keep", False):  # --keep: the vault stays for experiments (a million takes minutes to build)
            subprocess.run(["rm", "-rf", vault, b.path("server-%d" % n)])

    def sync(self, n, vault):
        b, timeout = self.b, self.b.a.timeout
        data, port = b.path("server-%d" % n), _free_port()
        b.run(b.rc(None, "server", "account-add", "bench", "--data", data, "--json"), "receipt",
              out=b.path("account.json"))
        with open(b.path("account.json")) as f:
            token = json.load(f)["token"]
        with open(b.path("logs", "server-%d.err" % n), "wb") as err:
            server = subprocess.Popen(b.rc(None, "server", "run", "--data", data, "--listen", "127.0.0.1:%d" % port),
                                      env=b.env, stdout=err, stderr=err, start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("server did not listen (logs/server-%d.err)" % n)
                    time.sleep(0.1)
            b.run(b.rc(vault, "remote", "set", "http://127.0.0.1:%d" % port, "--account", "bench", "--token", token),
                  "receipt")
            self.cell("sync (first, whole vault)", n, lambda: b.run(b.rc(vault, "sync"), "receipt", timeout=timeout))
            b.run(b.rc(vault, "list", "--from", "2021-03-01", "--to", "2021-03-31", "--json"), "receipt",
                  out=b.path("one.json"))
            with open(b.path("one.json")) as f:
                rid = json.load(f)[0]["id"]  # every size has receipts of that month (an evenly spaced subset)
            edits = iter(range(1000))

            def one_edit():
                b.run(b.rc(vault, "edit", rid, "--note", "edit %d by tools/bench --scale" % next(edits)), "receipt")
                return b.run(b.rc(vault, "sync"), "receipt")
            self.cell("sync (one edit)", n, one_edit)
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    def table(self):
        big = self.sizes[-2:] if len(self.sizes) > 1 else []
        head = "| command | " + " | ".join("{:,} receipts".format(n) for n in self.sizes) + " |" + \
            (" growth {:,}→{:,} (rows ×{:g}) |".format(big[0], big[1], big[1] / big[0]) if big else "")
        out = [head, "|---|" + "---:|" * len(self.sizes) + ("---:|" if big else "")]
        for step in [s for step in STEPS for s in ([step, "floor: " + step] if step in FLOORED else [step])]:
            cells = []
            for n in self.sizes:
                c = self.cells.get((step, n))
                if isinstance(c, tuple):
                    s, rss, _ = c
                    rate = " (%s rows/s)" % "{:,.0f}".format(n / s) if step == "import --manifest" and s else ""
                    cells.append("%s s, %.0f MB%s" % (_secs(s), rss / MB, rate))
                else:
                    cells.append(c or "–")
            growth = ""
            if big:
                a, z = self.cells.get((step, big[0])), self.cells.get((step, big[1]))
                if isinstance(a, tuple) and isinstance(z, tuple):
                    growth = "time ×%.1f, RSS ×%.1f" % (z[0] / max(a[0], 0.01), z[1] / max(a[1], 1))
                growth = " %s |" % (growth or "–")
            out.append("| %s | %s |%s" % (step, " | ".join(cells), growth))
        bytes_ = [self.catalog.get(n) for n in self.sizes]
        growth = " ×%.1f |" % (bytes_[-1] / bytes_[-2]) if big and all(bytes_[-2:]) else (" – |" if big else "")
        out.append("| catalog bytes | %s |%s" % (" | ".join("{:,}".format(x) if x else "–" for x in bytes_), growth))
        return out

    def targets(self):
        n = self.sizes[-1]
        lines = []

        def get(step):
            c = self.cells.get((step, n))
            return c if isinstance(c, tuple) else None
        imp = get("import --manifest")
        lines.append("- manifest import ≥ 50,000 rows/s: %s" % (
            "%s (%.0f rows/s)" % ("met" if n / imp[0] >= 50000 else "MISSED", n / imp[0]) if imp else "no figure"))
        for step, limit in TARGETS.items():
            c = get(step)
            lines.append("- %s < %g s: %s" % (step, limit, "%s (%s s)" % ("met" if c[0] < limit else "MISSED", _secs(c[0]))
                                                if c else "no figure"))
        worst = max(((c[1], s) for (s, m), c in self.cells.items() if m == n and isinstance(c, tuple)), default=None)
        if worst:
            lines.append("- every command < 100 MB: %s (largest: %s, %.0f MB)" % (
                "met" if worst[0] < 100 * MB else "MISSED", worst[1], worst[0] / MB))
        return ["Targets of issue 17 at {:,} receipts:".format(n), ""] + lines + [""] + self.floor_ratios()

    def floor_ratios(self):
        """receipt against the sqlite3 shell on the same rows (issue 35), at each size, and the import's growth."""
        lines = ["Against the engine's floor (the sqlite3 shell alone on the same rows, same run):", ""]
        for step, limit in FLOORED.items():
            figures = []
            for n in self.sizes:
                a, z = self.cells.get((step, n)), self.cells.get(("floor: " + step, n))
                if isinstance(a, tuple) and isinstance(z, tuple):
                    ratio = a[0] / max(z[0], 0.001)
                    figures.append("{:,}: {:.2f}× ({})".format(n, ratio, "met" if ratio <= limit else "MISSED"))
            lines.append("- %s ≤ %g× the floor: %s" % (step, limit, ", ".join(figures) or "no figure"))
        big = self.sizes[-2:]
        if len(big) == 2:
            cells = [self.cells.get((s, n)) for s in ("import --manifest", "floor: import --manifest") for n in big]
            if all(isinstance(c, tuple) for c in cells):
                mine, floors = cells[1][0] / cells[0][0], cells[3][0] / cells[2][0]
                lines.append("- import's growth {:,}→{:,} ×{:.2f} against the floor's ×{:.2f}: {:.2f} ({})".format(
                    big[0], big[1], mine, floors, mine / floors, "met" if mine / floors <= 1.2 else "MISSED"))
        return lines


def warm(root, manifest):
    """Reads the files a manifest names once, so that every import reads them from the page cache."""
    with open(manifest, newline="") as f:
        for row in csv.DictReader(f):
            with open(os.path.join(root, row["path"]), "rb") as g:
                g.read()


def _secs(s):
    return "%.3f" % s if s < 1 else "%.2f" % s if s < 10 else "%.1f" % s


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(b, sizes, skip=()):
    t0 = time.time()
    rows = max(sizes)
    root = os.path.join(b.work, "scale-corpus")
    try:  # a complete corpus of at least as many rows serves (the sizes take subsets of its manifest)
        with open(os.path.join(root, "COMPLETE.json")) as f:
            done = json.load(f)
        if done.get("profile") != "small" or done.get("version") != corpus.VERSION or (done.get("rows") or 0) < rows:
            done = None
    except (OSError, ValueError):
        done = None
    if done is None:
        b.log("corpus of {:,} small receipts in {}".format(rows, root))
        done = corpus.generate(root, rows=rows)
    b.build_receipt()
    if b.receipt is None:
        raise SystemExit("bench --scale: no receipt binary (%s)" % b.why_not)
    s = Scale(b, sizes, skip)
    for n in sizes:
        manifest = subset(root, done["files"], n)
        warm(root, manifest)  # the files are read from the page cache, at every size alike
        s.run_size(n, manifest)
        with open(os.path.join(b.work, "scale-partial.md"), "w") as f:  # what is done so far, should a size not end
            f.write("\n".join(s.table()) + "\n")
    head = ["## tools/bench --scale, %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
            "Machine: %s, %d cores, Linux %s; load average at the end %.1f. Small text receipts of 1-4 KB "
            "(inline in the catalog), %d%% exact duplicates. Run took %.0f s. receipt %s." % (
                platform.node(), os.cpu_count(), platform.release(), os.getloadavg()[0],
                round(100 * corpus.DUP_FRAC), time.time() - t0, b.versions().get("receipt", "?")), ""]
    return "\n".join(head + s.table() + [""] + s.targets()) + "\n"
