#!/usr/bin/env python3
"""Many simulated household members against `receipt server run` on 127.0.0.1, for a bounded time.

    tools/loadtest [--seconds N] [--members N] [--household N] [--backends sqlite,postgres,postgres2]
                   [--receipt PATH] [--work DIR] [--out FILE]

Each member is a thread speaking the sync protocol of docs/PROTOCOL.md over HTTP (a lightweight
client, not a vault): its account has a token of its own, and members form households of
--household accounts whose first member owns a zone shared with the others (write). Until the time
is up every member repeats a one-edit sync: upload one small new blob (PUT /v1/blobs), push one
record — a new receipt, or an edit of one of its own receipts based on its last change tag, with the
new blob attached — then pull the zone's changes since its token. The time of that whole sequence is
the one-edit sync latency. The server's CPU per sync (user and system time of the receipt server
processes over the load, PostgreSQL's own excluded) is the figure to compare two binaries by on a
shared machine: throughput and latency follow whatever else runs on the same cores.

Backends, in one run: the embedded SQLite catalog (one process); PostgreSQL with one server process;
PostgreSQL with two processes sharing one database and one blob folder (members spread across both).
PostgreSQL is a throwaway cluster (initdb/pg_ctl from Debian's postgresql, as user nobody when run as
root) in a temporary folder on a free port, removed afterwards.

At the end every member pulls once more, and the run checks, per zone, against a full pull from the
start: no record twice, every change a member saved is there as its last save left it (change tag
and content), no record nobody wrote, and every member's own copy of the zone equals the server's.
Any HTTP error, conflict or rejection counts as an error. Exit 0 only when every backend has none.
"""
import argparse
import glob
import hashlib
import http.client
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BACKENDS = ("sqlite", "postgres", "postgres2")


def log(msg):
    print(time.strftime("[%H:%M:%S] ") + msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what, seconds=60):
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("loadtest: %s did not start listening on %d" % (what, port))
            time.sleep(0.1)


class Cluster:
    """A throwaway PostgreSQL cluster, like Tests/TestSupport/PostgresCluster.swift."""

    def __init__(self, work):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
        if not bins:
            raise SystemExit("loadtest: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin): tools/install-deps")
        self.bin, self.user = bins[-1], "receipt"
        self.run_as = ["/usr/sbin/runuser", "-u", "nobody", "--"] if os.getuid() == 0 else []
        self.folder = tempfile.mkdtemp(prefix="receipt-loadtest-pg-", dir=work)
        os.chmod(self.folder, 0o755)
        if self.run_as:
            subprocess.run(["chown", "nobody:nogroup", self.folder], check=True)
        self.pg(["initdb", "-D", self.folder + "/data", "-U", self.user, "--auth=trust", "-E", "UTF8",
                 "--no-sync", "--locale=C"])
        self.port = free_port()
        self.pg(["pg_ctl", "-D", self.folder + "/data", "-l", self.folder + "/log", "-w", "-t", "120", "-o",
                 "-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=300" % (self.port, self.folder),
                 "start"])

    def pg(self, argv):
        r = subprocess.run(self.run_as + [self.bin + "/" + argv[0]] + argv[1:], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, close_fds=True)
        if r.returncode != 0:
            raise SystemExit("loadtest: %s failed: %s" % (argv[0], (r.stdout + r.stderr)[-600:]))

    def database(self, name):
        self.pg(["createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, name])
        return "postgres://%s@127.0.0.1:%d/%s" % (self.user, self.port, name)

    def stop(self):
        subprocess.run(self.run_as + [self.bin + "/pg_ctl", "-D", self.folder + "/data", "-m", "fast", "stop"],
                       capture_output=True, stdin=subprocess.DEVNULL)
        shutil.rmtree(self.folder, ignore_errors=True)


class Member:
    def __init__(self, name, token, port):
        self.name, self.token, self.port = name, token, port
        self.zone = None                 # (owner, name)
        self.since = None                # change token of the last pull
        self.seen = {}                   # record id -> (changeTag, note): the zone as this member pulled it
        self.mine = {}                   # record id -> (changeTag, note): its own last save of each record
        self.latencies, self.errors, self.conn = [], [], None

    def request(self, method, path, body=None, content_type="application/json"):
        for attempt in range(3):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            headers = {"Authorization": "Bearer " + self.token}
            if body is not None:
                headers["Content-Type"] = content_type
            try:
                self.conn.request(method, path, body=body, headers=headers)
                r = self.conn.getresponse()
                data = r.read()
            except (OSError, http.client.HTTPException) as e:
                # A connection the server closed while idle: one new connection, then it is an error.
                self.conn.close()
                self.conn = None
                if attempt == 0 and method in ("GET", "PUT"):
                    continue
                raise RuntimeError("%s %s: %s" % (method, path, e))
            if r.status == 429 and attempt < 2:
                time.sleep(float(r.getheader("Retry-After") or 1))
                continue
            if r.status >= 300:
                raise RuntimeError("%s %s: HTTP %d %s" % (method, path, r.status, data[:200]))
            return json.loads(data) if data and r.getheader("Content-Type", "").startswith("application/json") else None
        raise RuntimeError("%s %s: still 429 after retries" % (method, path))

    def zone_path(self):
        return "/v1/zones/%s/%s" % self.zone

    def pull(self):
        while True:
            q = "?limit=500" + ("&since=" + self.since if self.since else "")
            page = self.request("GET", self.zone_path() + "/changes" + q)
            for rec in page["records"]:
                note = rec["receipt"].get("note") if rec["receipt"] else None
                self.seen[rec["id"]] = (rec["changeTag"], note)
            self.since = page["changeToken"]
            if not page["more"]:
                return

    def one_edit_sync(self, rng):
        blob = ("receipt %s %d\n" % (self.name, rng.getrandbits(64))).encode() * rng.randint(4, 40)
        sha = hashlib.sha256(blob).hexdigest()
        t0 = time.monotonic()
        self.request("PUT", "/v1/blobs/" + sha, blob, "application/octet-stream")
        if self.mine and rng.random() < 0.5:
            rid = rng.choice(sorted(self.mine))
            base = self.mine[rid][0]
        else:
            rid, base = str(uuid.uuid4()), None
        now = int(time.time() * 1000)
        note = "%s edit %d" % (self.name, rng.getrandbits(32))
        receipt = {"merchant": "Loadtest Market", "date": "2026-11-25", "total": "%d.%02d" % (rng.randint(1, 300), rng.randint(0, 99)),
                   "currency": "EUR", "category": "groceries", "note": note, "tags": [],
                   "attachments": [{"sha256": sha, "size": len(blob), "filename": "r.txt", "mediaType": "text/plain"}],
                   "createdAt": now, "modifiedAt": now}
        out = self.request("POST", self.zone_path() + "/push",
                           json.dumps({"records": [{"id": rid, "baseTag": base, "receipt": receipt}]}).encode())
        result = out["results"][0]
        if result["status"] != "saved":
            raise RuntimeError("push of %s: %s %s" % (rid, result["status"], result.get("error") or ""))
        self.mine[rid] = (result["changeTag"], note)
        self.pull()
        self.latencies.append(time.monotonic() - t0)

    def run(self, deadline, seed):
        rng = random.Random(seed)
        while time.monotonic() < deadline:
            try:
                self.one_edit_sync(rng)
            except Exception as e:  # noqa: BLE001 - counted and reported; the member goes on
                self.errors.append(str(e)[:300])
                time.sleep(0.05)


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(p / 100.0 * len(s))) - 1))]


def cpu_seconds(procs):
    """User and system CPU the server processes have used so far (/proc/PID/stat's utime and stime)."""
    ticks = 0
    for proc in procs:
        with open("/proc/%d/stat" % proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()  # the command name in parentheses may hold blanks
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def run_backend(a, backend, receipt, work, cluster):
    data = os.path.join(work, backend + "-data")
    os.makedirs(data)
    db = ["--database", cluster.database("loadtest_" + backend)] if backend.startswith("postgres") else []
    log("%s: %d accounts" % (backend, a.members))
    members = []
    for i in range(a.members):
        r = subprocess.run([receipt, "server", "account-add", "m%03d" % i, "--data", data, "--json"] + db,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("loadtest: account-add failed: %s" % r.stderr.strip()[-300:])
        members.append(json.loads(r.stdout)["token"])
    procs, ports = [], []
    for p in range(2 if backend == "postgres2" else 1):
        port = free_port()
        err = open(os.path.join(work, "%s-server-%d.log" % (backend, p)), "wb")
        # Every member connects from 127.0.0.1: the per-address cap must admit them all.
        procs.append(subprocess.Popen([receipt, "server", "run", "--data", data, "--listen", "127.0.0.1:%d" % port,
                                       "--max-connections-per-address", str(a.members + 16)] + db,
                                      stdout=err, stderr=err, start_new_session=True))
        ports.append(port)
    try:
        for port, proc in zip(ports, procs):
            wait_listening(port, proc, "receipt server run")
        members = [Member("m%03d" % i, tok, ports[i % len(ports)]) for i, tok in enumerate(members)]
        # Households: the first member owns the zone, the others write to it.
        for h in range(0, len(members), a.household):
            owner, zone = members[h], "household"
            owner.request("PUT", "/v1/zones/%s/%s" % (owner.name, zone))
            for m in members[h:h + a.household]:
                m.zone = (owner.name, zone)
                if m is not owner:
                    owner.request("PUT", "/v1/zones/%s/%s/shares/%s" % (owner.name, zone, m.name),
                                  json.dumps({"role": "write"}).encode())
        log("%s: %d members, %d server process(es), %d s" % (backend, len(members), len(procs), a.seconds))
        cpu_before = cpu_seconds(procs)
        start = time.monotonic()
        deadline = start + a.seconds
        threads = [threading.Thread(target=m.run, args=(deadline, i)) for i, m in enumerate(members)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        cpu = cpu_seconds(procs) - cpu_before
        errors = [e for m in members for e in m.errors]
        problems = check(members)
        lat = [x for m in members for x in m.latencies]
        rss = []
        for proc in procs:
            try:
                with open("/proc/%d/status" % proc.pid) as f:
                    rss.append(int([ln for ln in f if ln.startswith("VmHWM:")][0].split()[1]) * 1024)
            except (OSError, IndexError):
                pass
        return {"backend": backend, "processes": len(procs), "members": len(members), "seconds": elapsed,
                "syncs": len(lat), "rate": len(lat) / elapsed, "p50": percentile(lat, 50), "p99": percentile(lat, 99),
                "errors": errors, "problems": problems, "rss": max(rss) if rss else 0,
                "records": sum(len(m.mine) for m in members), "cpu": cpu}
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def check(members):
    """Every member's view and every saved change against a full pull of each zone from the start."""
    problems = []
    zones = {}
    for m in members:
        try:
            m.pull()
        except Exception as e:  # noqa: BLE001
            problems.append("%s: final pull failed: %s" % (m.name, e))
        zones.setdefault(m.zone, []).append(m)
    for zone, group in zones.items():
        owner = next(m for m in group if m.name == zone[0])
        full, ids, since = {}, [], None
        while True:
            page = owner.request("GET", "/v1/zones/%s/%s/changes?limit=500%s" % (zone + ("&since=" + since if since else "",)))
            for rec in page["records"]:
                ids.append(rec["id"])
                full[rec["id"]] = (rec["changeTag"], rec["receipt"].get("note") if rec["receipt"] else None)
            since = page["changeToken"]
            if not page["more"]:
                break
        if len(ids) != len(set(ids)):
            problems.append("zone %s/%s: %d records listed twice" % (zone + (len(ids) - len(set(ids)),)))
        written = {}
        for m in group:
            for rid, state in m.mine.items():
                written[rid] = state
                if full.get(rid) != state:
                    problems.append("zone %s/%s: %s's last save of %s %s, the server has %s" % (zone + (m.name, rid, state, full.get(rid))))
            if m.seen != full:
                problems.append("zone %s/%s: %s's copy differs from the server's (%d vs %d records)" % (zone + (m.name, len(m.seen), len(full))))
        extra = set(full) - set(written)
        if extra:
            problems.append("zone %s/%s: %d records nobody wrote" % (zone + (len(extra),)))
    return problems


def build(a):
    if a.receipt:
        return os.path.abspath(a.receipt)
    log("building receipt (release, scratch .build-release)")
    subprocess.run(["swift", "build", "-c", "release", "--product", "receipt", "--scratch-path", ".build-release",
                    "--static-swift-stdlib"],
                   cwd=REPO, check=True)
    return os.path.join(REPO, ".build-release", "release", "receipt")


def main():
    ap = argparse.ArgumentParser(prog="tools/loadtest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=30, help="load time per backend (default %(default)s)")
    ap.add_argument("--members", type=int, default=200, help="simulated members, all concurrent (default %(default)s)")
    ap.add_argument("--household", type=int, default=4, help="members per shared zone (default %(default)s)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="subset of %(default)s")
    ap.add_argument("--receipt", metavar="PATH", help="receipt binary (default: a release build of this tree)")
    ap.add_argument("--work", default="/tmp/receipt-loadtest", help="work folder, emptied first (default %(default)s)")
    ap.add_argument("--out", metavar="FILE", help="Markdown results (default WORK/results.md)")
    a = ap.parse_args()
    backends = a.backends.split(",")
    if set(backends) - set(BACKENDS) or not backends:
        ap.error("--backends: a subset of %s" % ",".join(BACKENDS))
    if a.seconds < 1 or a.members < 1 or a.household < 1:
        ap.error("--seconds, --members and --household must be 1 or more")
    receipt = build(a)
    work = os.path.abspath(a.work)
    if os.path.isdir(work) and os.listdir(work) and not os.path.exists(os.path.join(work, ".made-by-loadtest")):
        ap.error("refusing to empty %s (not made by tools/loadtest)" % work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    open(os.path.join(work, ".made-by-loadtest"), "w").close()
    t0 = time.time()
    cluster = Cluster(work) if any(b.startswith("postgres") for b in backends) else None
    try:
        results = [run_backend(a, b, receipt, work, cluster) for b in backends]
    finally:
        if cluster:
            cluster.stop()
    lines = ["## tools/loadtest, %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
             "Machine: %s, %d cores, Linux %s; load average at the end %.1f (the load generator runs on the same "
             "cores as the server). %d members in households of %d, all concurrent, %d s per backend. "
             "Command: `%s`." % (platform.node(), os.cpu_count(), platform.release(), os.getloadavg()[0], a.members,
                                a.household, a.seconds, " ".join(["tools/loadtest"] + sys.argv[1:])), "",
             "| backend | server processes | one-edit syncs | syncs/s | p50 | p99 | server CPU per sync | errors | lost or duplicated | server peak RSS |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in results:
        lines.append("| %s | %d | %d | %.0f | %.0f ms | %.0f ms | %.2f ms | %d | %s | %.0f MB |" % (
            {"sqlite": "SQLite", "postgres": "PostgreSQL", "postgres2": "PostgreSQL"}[r["backend"]], r["processes"],
            r["syncs"], r["rate"], 1000 * r["p50"], 1000 * r["p99"], 1000 * r["cpu"] / max(1, r["syncs"]), len(r["errors"]),
            "none (%d records checked)" % r["records"] if not r["problems"] else "%d problems" % len(r["problems"]),
            r["rss"] / 1e6))
    for r in results:
        for e in r["errors"][:5] + r["problems"][:5]:
            lines.append("- %s: %s" % (r["backend"], e))
    text = "\n".join(lines) + "\n"
    print(text)
    with open(a.out or os.path.join(work, "results.md"), "w") as f:
        f.write(text)
    log("run took %.0f s" % (time.time() - t0))
    return 0 if all(not r["errors"] and not r["problems"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
