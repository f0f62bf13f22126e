"""The web view's page latency on a zone of 10,000 receipts (tools/bench --web).

Builds the zone the real way (a manifest import into a vault, then `receipt sync` to a real
`receipt server run`), signs in over HTTP, and times each page over one kept-alive connection:
the zone list, the first and a far page of the receipts, a merchant filter, a word search, a date
range, and a receipt's page. Prints a Markdown table of the median and 95th percentile per page.
"""
import csv
import http.client
import json
import os
import statistics
import subprocess
import time
import urllib.parse

TARGET_MS = 50
MERCHANTS = ["Bakery", "Hardware Store", "City Cab", "Pharmacy", "Market", "Bookshop", "Garage", "Cafe"]


def build_zone(receipt, work, receipts):
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
    token = json.loads(subprocess.check_output([receipt, "server", "account-add", "bench", "--data", data, "--json"]))["token"]
    subprocess.run([receipt, "server", "passwd", "bench", "--data", data], input="bench-password\n", text=True, check=True)
    server = subprocess.Popen([receipt, "server", "run", "--data", data, "--listen", "127.0.0.1:0", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = json.loads(server.stdout.readline())["listening"]
    for args in (["init"], ["remote", "set", "http://" + address, "--account", "bench", "--token", token],
                 ["import", "--manifest", manifest], ["sync"]):
        done = subprocess.run([receipt, "--vault", vault] + args, capture_output=True, text=True)
        if done.returncode != 0:
            server.terminate()
            raise SystemExit("receipt %s failed: %s" % (" ".join(args), done.stderr.strip()))
    some_id = json.loads(subprocess.check_output([receipt, "--vault", vault, "list", "--json", "--merchant", "Garage"]))[0]["id"]
    return server, address, some_id


def run(receipt, work, receipts=10000, rounds=30):
    os.makedirs(work, exist_ok=True)
    started = time.time()
    server, address, some_id = build_zone(receipt, work, receipts)
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
                 ("receipt page", "/z/bench/personal/r/" + some_id)]
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
    lines = ["## tools/bench --web, %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
             "One zone of %d receipts, %d requests per page over one connection, binary %s; setup took %.0f s." %
             (receipts, rounds, receipt, time.time() - started), "",
             "| page | median ms | p95 ms | under %d ms |" % TARGET_MS, "|---|---:|---:|---|"]
    for label, median, p95 in rows:
        lines.append("| %s | %.1f | %.1f | %s |" % (label, median, p95, "yes" if p95 < TARGET_MS else "NO"))
    text = "\n".join(lines) + "\n"
    print(text)
    return text
