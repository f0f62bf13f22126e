"""The web view's page latency on a zone of 10,000 receipts (tools/bench --web).

Builds the zone the real way (a manifest import into a vault, then `receipt sync` to a real
`receipt server run`), signs in over HTTP, and times each page over one kept-alive connection:
the zone list, the first and a far page of the receipts, a merchant filter, a word search, a date
range, a claim-status filter, a receipt's page and a thumbnail. Once with the embedded SQLite
catalog, once with the catalog in PostgreSQL (a throwaway cluster, initdb/pg_ctl from Debian's
postgresql, run as nobody when root). Prints a Markdown table of the median and 95th percentile.
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
        self.pg("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "receipt", "bench")
        self.url = "postgres://receipt@127.0.0.1:%d/bench" % self.port

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
    return server, address, some["id"], some["attachments"][0]["sha256"]


def measure(receipt, work, receipts, rounds, catalog):
    """{page label: (median ms, p95 ms)} for one server (catalog: [] or ["--database", URL])."""
    os.makedirs(work, exist_ok=True)
    server, address, some_id, some_sha = build_zone(receipt, work, receipts, catalog)
    try:
        host, port = address.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        body = urllib.parse.urlencode({"account": "bench", "password": "bench-password"})
        conn.request("POST", "/signin", body, {"Content-Type": "application/x-www-form-urlencoded"})
        answer = conn.getresponse()
        answer.read()
        cookie = answer.getheader("Set-Cookie").split(";")[0]
        pages = [("zones", "/"),
                 ("receipts, page 1", "/z/bench/personal"),
                 ("receipts, page 150", "/z/bench/personal?page=150"),
                 ("merchant filter", "/z/bench/personal?merchant=garage"),
                 ("word search", "/z/bench/personal?q=hardware+note"),
                 ("date range", "/z/bench/personal?from=2023-01-01&to=2023-06-30"),
                 ("claim status filter", "/z/bench/personal?status=none&page=20"),
                 ("receipt page", "/z/bench/personal/r/" + some_id),
                 ("thumbnail (cached after the first)", "/z/bench/personal/r/%s/t/%s" % (some_id, some_sha))]
        rows = []
        for label, path in pages:
            times = []
            for _ in range(rounds):
                t = time.perf_counter()
                conn.request("GET", path, headers={"Cookie": cookie})
                answer = conn.getresponse()
                answer.read()
                times.append((time.perf_counter() - t) * 1000)
                if answer.status != 200:
                    raise SystemExit("%s answered %d" % (path, answer.status))
            times.sort()
            rows.append((label, statistics.median(times), times[int(len(times) * 0.95) - 1]))
    finally:
        server.terminate()
        server.wait()
    return rows


def run(receipt, work, receipts=10000, rounds=30):
    started = time.time()
    embedded = measure(receipt, os.path.join(work, "sqlite"), receipts, rounds, [])
    cluster = Cluster(work)
    try:
        postgres = measure(receipt, os.path.join(work, "postgres"), receipts, rounds, ["--database", cluster.url])
    finally:
        cluster.stop()
    lines = ["## tools/bench --web, %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
             "One zone of %d receipts, %d requests per page over one connection, binary %s; took %.0f s." %
             (receipts, rounds, receipt, time.time() - started), "",
             "| page | SQLite median ms | SQLite p95 ms | PostgreSQL median ms | PostgreSQL p95 ms | p95 under %d ms |" % TARGET_MS,
             "|---|---:|---:|---:|---:|---|"]
    for (label, median, p95), (_, pg_median, pg_p95) in zip(embedded, postgres):
        lines.append("| %s | %.1f | %.1f | %.1f | %.1f | %s |" % (label, median, p95, pg_median, pg_p95,
                                                               "yes" if max(p95, pg_p95) < TARGET_MS else "NO"))
    text = "\n".join(lines) + "\n"
    print(text)
    return text
