"""The web view's page latency on a zone of 10,000 receipts (tools/bench --web).

Builds the zone the real way (a manifest import into a vault, then `receipt sync` to a real
`receipt server run`), signs in over HTTP, and times each page over one kept-alive connection:
the zone list, the first and a far page of the receipts, a merchant filter, a word search (in the
metadata, and in the extracted text), a date range, a claim-status filter, a receipt's page and a
thumbnail. Once with the embedded SQLite catalog, once with the catalog in PostgreSQL (a throwaway
cluster, initdb/pg_ctl from Debian's postgresql, run as nobody when root). Prints a Markdown table of
the median and 95th percentile.
"""
import csv
import glob
import shutil
import socket
import tempfile
import http.client
import json
import os
import statistics
import subprocess
import time
import urllib.parse

TARGET_MS = 50
TARGET_KB = 40  # a page's own bytes, before its images
MERCHANTS = ["Bakery", "Hardware Store", "City Cab", "Pharmacy", "Market", "Bookshop", "Garage", "Cafe"]


class Cluster:
    """A throwaway PostgreSQL cluster on a free port (like Tests/TestSupport/PostgresCluster.swift)."""

    def __init__(self, work):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
        if not bins:
            raise SystemExit("bench --web: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin): tools/install-deps")
        self.bin = bins[-1]
        self.run_as = ["/usr/sbin/runuser", "-u", "nobody", "--"] if os.getuid() == 0 else []
        # In /tmp itself: the bench's work folder is private to root, and the cluster runs as nobody.
        self.folder = tempfile.mkdtemp(prefix="receipt-bench-pg-")
        os.chmod(self.folder, 0o755)
        if self.run_as:
            subprocess.run(["chown", "nobody:nogroup", self.folder], check=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.pg("initdb", "-D", self.folder + "/data", "-U", "receipt", "--auth=trust", "-E", "UTF8", "--locale=C")
        self.pg("pg_ctl", "-D", self.folder + "/data", "-l", self.folder + "/log", "-w", "-t", "120", "-o",
                "-p %d -k %s -c listen_addresses=127.0.0.1" % (self.port, self.folder), "start")

    def database(self, name):
        """A new database of the cluster, and its URL."""
        self.pg("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "receipt", name)
        return "postgres://receipt@127.0.0.1:%d/%s" % (self.port, name)

    def pg(self, tool, *args):
        done = subprocess.run(self.run_as + [os.path.join(self.bin, tool)] + list(args), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise SystemExit("bench --web: %s failed: %s" % (tool, (done.stdout + done.stderr)[-600:]))

    def stop(self):
        subprocess.run(self.run_as + [os.path.join(self.bin, "pg_ctl"), "-D", self.folder + "/data", "-m", "fast", "stop"],
                       capture_output=True, stdin=subprocess.DEVNULL)
        shutil.rmtree(self.folder, ignore_errors=True)


def build_zone(receipt, work, receipts, catalog):
    data, vault, files = (os.path.join(work, n) for n in ("data", "vault", "files"))
    os.makedirs(files)
    manifest = os.path.join(files, "manifest.csv")
    with open(manifest, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["path", "merchant", "date", "total", "currency", "category", "note"])
        for i in range(receipts):
            name = "r%05d.txt" % i
            with open(os.path.join(files, name), "w") as g:
                g.write("receipt %d\n" % i)
            out.writerow([name, MERCHANTS[i % len(MERCHANTS)], "20%02d-%02d-%02d" % (20 + i % 6, 1 + i % 12, 1 + i % 28),
                          "%d.%02d" % (i % 500, i % 100), "EUR" if i % 3 else "USD", ["food", "travel", "home"][i % 3],
                          "note %d" % i])
    token = json.loads(subprocess.check_output([receipt, "server", "account-add", "bench", "--data", data, "--json"] + catalog))["token"]
    subprocess.run([receipt, "server", "passwd", "bench", "--data", data] + catalog, input="bench-password\n", text=True,
                   check=True, capture_output=True)
    server = subprocess.Popen([receipt, "server", "run", "--data", data, "--listen", "127.0.0.1:0", "--json"] + catalog,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = json.loads(server.stdout.readline())["listening"]
    for args in (["init"], ["remote", "set", "http://" + address, "--account", "bench", "--token", token],
                 ["import", "--manifest", manifest], ["sync"]):
        done = subprocess.run([receipt, "--vault", vault] + args, capture_output=True, text=True)
        if done.returncode != 0:
            server.terminate()
            raise SystemExit("receipt %s failed: %s" % (" ".join(args), done.stderr.strip()))
    some = json.loads(subprocess.check_output([receipt, "--vault", vault, "list", "--json", "--merchant", "Garage"]))[0]
    return server, address, vault, some["id"], some["attachments"][0]["sha256"]


# The command line's answer for the same rows (all of them: `list` has no pages), the peer a page is
# measured beside: the same filter through `receipt list` / `receipt search` on the vault the zone came from.
CLI_PEERS = {
    "receipts, page 1": ["list"],
    "merchant filter": ["list", "--merchant", "garage"],
    "word search": ["search", "hardware", "note"],
    "date range": ["list", "--from", "2023-01-01", "--to", "2023-06-30"],
    "claim status filter": ["list", "--status", "none"],
}
CLI_ROUNDS = 5


def cli_ms(receipt, vault, args):
    """Median wall milliseconds of the whole `receipt` process (start, query, printing every row)."""
    times = []
    for _ in range(CLI_ROUNDS):
        t = time.perf_counter()
        subprocess.run([receipt, "--vault", vault] + args, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def pages(some_id, some_sha):
    return [("zones", "/"),
            ("receipts, page 1", "/z/bench/personal"),
            ("receipts, page 150", "/z/bench/personal?page=150"),
            ("merchant filter", "/z/bench/personal?merchant=garage"),
            ("word search", "/z/bench/personal?q=hardware+note"),
            # "receipt N" is each file's text, extracted by the import and synced to the server.
            ("word search, extracted text", "/z/bench/personal?q=receipt+42"),
            ("date range", "/z/bench/personal?from=2023-01-01&to=2023-06-30"),
            ("claim status filter", "/z/bench/personal?status=none&page=20"),
            ("receipt page", "/z/bench/personal/r/" + some_id),
            ("thumbnail (cached after the first)", "/z/bench/personal/r/%s/t/%s" % (some_id, some_sha))]


class Served:
    """One binary's server over its own zone, signed in on one kept-alive connection."""

    def __init__(self, receipt, work, receipts, catalog):
        os.makedirs(work, exist_ok=True)
        self.receipt = receipt
        self.server, address, self.vault, some_id, some_sha = build_zone(receipt, work, receipts, catalog)
        self.pages = pages(some_id, some_sha)
        host, port = address.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)
        body = urllib.parse.urlencode({"account": "bench", "password": "bench-password"})
        self.conn.request("POST", "/signin", body, {"Content-Type": "application/x-www-form-urlencoded"})
        answer = self.conn.getresponse()
        answer.read()
        self.cookie = answer.getheader("Set-Cookie").split(";")[0]

    def time(self, path):
        """Milliseconds until the whole answer is read, and its size in bytes."""
        t = time.perf_counter()
        try:
            self.conn.request("GET", path, headers={"Cookie": self.cookie})
            answer = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError):
            # The server closed the connection while the other binary's zone was built: once again.
            self.conn.close()
            t = time.perf_counter()
            self.conn.request("GET", path, headers={"Cookie": self.cookie})
            answer = self.conn.getresponse()
        size = len(answer.read())
        elapsed = (time.perf_counter() - t) * 1000
        if answer.status != 200:
            raise SystemExit("%s answered %d" % (path, answer.status))
        return elapsed, size

    def stop(self):
        self.server.terminate()
        self.server.wait()


def measure(binaries, work, receipts, rounds, catalogs):
    """Per page: its label, per binary (median ms, p95 ms), with two binaries the median of the
    ratios second/first, each pair timed back to back (the first binary, then the second, for every
    round) so that the machine's drift touches both alike; the last binary's page size in bytes and
    its command line's time for the same rows (None where the page has no CLI peer)."""
    served = []
    try:
        for i, (receipt, catalog) in enumerate(zip(binaries, catalogs)):
            served.append(Served(receipt, os.path.join(work, str(i)), receipts, catalog))
        rows = []
        for n, (label, _) in enumerate(served[0].pages):
            times = [[] for _ in served]
            size = 0
            for _ in range(rounds):
                for i, one in enumerate(served):
                    elapsed, size = one.time(one.pages[n][1])
                    times[i].append(elapsed)
            peer = CLI_PEERS.get(label)
            cli = cli_ms(served[-1].receipt, served[-1].vault, peer) if peer else None
            ratios = sorted(b / a for a, b in zip(*times)) if len(served) == 2 else []
            stats = []
            for t in times:
                t = sorted(t)
                stats.append((statistics.median(t), t[int(len(t) * 0.95) - 1]))
            rows.append((label, stats, statistics.median(ratios) if ratios else None, size, cli))
    finally:
        for one in served:
            one.stop()
    return rows


def run(receipt, work, receipts=10000, rounds=30, baseline=None):
    """The table of one binary, or (baseline given) of the baseline and this one side by side."""
    started = time.time()
    binaries = [baseline, receipt] if baseline else [receipt]
    embedded = measure(binaries, os.path.join(work, "sqlite"), receipts, rounds, [[] for _ in binaries])
    cluster = Cluster(work)
    try:
        urls = [cluster.database("bench%d" % i) for i in range(len(binaries))]
        postgres = measure(binaries, os.path.join(work, "postgres"), receipts, rounds, [["--database", u] for u in urls])
    finally:
        cluster.stop()
    lines = ["## tools/bench --web, %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), ""]
    verdict = "p95 under %d ms, page under %d KB" % (TARGET_MS, TARGET_KB)
    if baseline:
        lines += ["One zone of %d receipts per binary, %d requests per page and binary over one connection each, "
                  "alternating baseline %s and new %s; took %.0f s. Ratio: median of new/baseline, request by request." %
                  (receipts, rounds, baseline, receipt, time.time() - started)]
        header = ("| page | SQLite baseline median ms | SQLite new median ms | new p95 ms | ratio | "
                  "PostgreSQL baseline median ms | PostgreSQL new median ms | new p95 ms | ratio |")
    else:
        lines += ["One zone of %d receipts, %d requests per page over one connection, binary %s; took %.0f s." %
                  (receipts, rounds, receipt, time.time() - started)]
        header = "| page | SQLite median ms | SQLite p95 ms | PostgreSQL median ms | PostgreSQL p95 ms |"
    lines += ["KB: the page's own bytes (images are fetched apart). CLI ms: `receipt %s` of the same rows on the "
              "vault the zone was synced from (the whole process, every matching row printed; median of %d), "
              "in the same run." % ("list/search", CLI_ROUNDS), "",
              header + " KB | CLI ms | %s |" % verdict, "|" + "---|" + "---:|" * (header.count("|") - 2) + "---:|---:|---|"]
    for (label, s_stats, s_ratio, size, cli), (_, p_stats, p_ratio, _, _) in zip(embedded, postgres):
        if baseline:
            (sb, sn), (pb, pn) = s_stats, p_stats
            cells = ["%.1f" % sb[0], "%.1f" % sn[0], "%.1f" % sn[1], "%.2f" % s_ratio,
                     "%.1f" % pb[0], "%.1f" % pn[0], "%.1f" % pn[1], "%.2f" % p_ratio]
            worst = max(sn[1], pn[1])
        else:
            [(median, p95)], [(pg_median, pg_p95)] = s_stats, p_stats
            cells = ["%.1f" % c for c in (median, p95, pg_median, pg_p95)]
            worst = max(p95, pg_p95)
        image = label.startswith("thumbnail")
        ok = worst < TARGET_MS and (image or size < TARGET_KB * 1024)
        lines.append("| %s | %s | %.1f | %s | %s |" % (
            label, " | ".join(cells),
            size / 1024, "%.0f" % cli if cli is not None else "–", "yes" if ok else "NO"))
    text = "\n".join(lines) + "\n"
    print(text)
    return text
