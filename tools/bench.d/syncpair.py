"""The one-edit sync of two receipt binaries side by side (tools/bench --sync-pair OLD).

Each binary gets its own server and two vaults, both filled like the bench's sync steps (the corpus
imported with --no-index into vault A, synced, pulled into vault B). Then, round after round and
binary after binary (A B A B ...), one receipt of vault A is edited, vault A syncs (the push) and
vault B syncs (the pull), each timed as a whole process. On a shared machine only what was measured
side by side compares: the result is each binary's median and the median of the per-round ratios.

With OLD given as `moved`, the binary is compared with itself: each round times a one-edit sync with
the account's text counter unmoved, then one right after the counter moved (a text stored under an
extractor version no vault asks for, so every blob stays pending and the sync asks about all of
them: what every sync cost before the counter existed, revision 3).
"""
import json
import os
import socket
import statistics
import subprocess
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Side:
    def __init__(self, name, binary, work, env):
        self.name, self.binary, self.env = name, os.path.abspath(binary), env
        self.root = os.path.join(work, name)
        self.va, self.vb = os.path.join(self.root, "a"), os.path.join(self.root, "b")
        self.server = None
        self.push, self.pull = [], []
        self.rid = None
        self.edits = 0

    def rc(self, *args, vault=None):
        return [self.binary] + (["--vault", vault] if vault else []) + list(args)

    def run(self, *args, vault=None):
        r = subprocess.run(self.rc(*args, vault=vault), env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s %s: exit %d: %s" % (self.name, " ".join(args), r.returncode, r.stderr.strip()))
        return r.stdout

    def start(self, files):
        os.makedirs(self.root)
        data = os.path.join(self.root, "server")
        token = json.loads(self.run("server", "account-add", "bench", "--data", data, "--json"))["token"]
        port = free_port()
        self.url, self.token = "http://127.0.0.1:%d" % port, token
        self.log = open(os.path.join(self.root, "server.err"), "wb")
        self.server = subprocess.Popen(self.rc("server", "run", "--data", data, "--listen", "127.0.0.1:%d" % port),
                                       env=self.env, stdout=self.log, stderr=self.log, start_new_session=True)
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if self.server.poll() is not None:
                    raise RuntimeError("%s: the server exited %d" % (self.name, self.server.returncode))
                time.sleep(0.1)
        for v in (self.va, self.vb):
            self.run("init", "--compression", "none", vault=v)
            self.run("remote", "set", "http://127.0.0.1:%d" % port, "--account", "bench", "--token", token, vault=v)
        self.run("import", files, "--no-index", vault=self.va)
        self.run("sync", vault=self.va)
        self.run("sync", vault=self.vb)
        first = json.loads(self.run("list", "--json", vault=self.va))[0]
        self.rid, self.sha = first["id"], first["attachments"][0]["sha256"]

    def move_counter(self):
        """Stores a text under a version no vault asks for: the account's counter moves, nothing else."""
        request = urllib.request.Request("%s/v1/text/%s/bench-%d" % (self.url, self.sha, self.edits), method="PUT",
                                         data=b'{"text": "bench"}', headers={
                                             "Authorization": "Bearer " + self.token, "Receipt-Revision": "4",
                                             "Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=60).read()

    def timed(self, vault):
        t = time.perf_counter()
        self.run("sync", vault=vault)
        return time.perf_counter() - t

    def round(self):
        self.edits += 1
        self.run("edit", self.rid, "--note", "edited by tools/bench %d" % self.edits, vault=self.va)
        self.push.append(self.timed(self.va))
        self.pull.append(self.timed(self.vb))

    def stop(self):
        if self.server and self.server.poll() is None:
            self.server.terminate()
            self.server.wait(timeout=60)
        if self.server:
            self.log.close()


def run(old, new, files, work, rounds, env, log):
    moved = old == "moved"
    sides = [Side("a", new, work, env)] if moved else [Side("old", old, work, env), Side("new", new, work, env)]
    a, b = ([], []), ([], [])  # (push, pull) seconds of the two things compared
    try:
        for s in sides:
            log("sync pair: filling %s (%s)" % (s.name, s.binary))
            s.start(files)
        for i in range(rounds):
            for k, s in enumerate([sides[0], sides[0]] if moved else sides):
                if moved and k == 1:
                    s.move_counter()
                s.round()
                for seconds, into in ((s.push[-1], (a, b)[k][0]), (s.pull[-1], (a, b)[k][1])):
                    into.append(seconds)
            log("round %d: push %.3f / %.3f, pull %.3f / %.3f" % (i + 1, a[0][-1], b[0][-1], a[1][-1], b[1][-1]))
    finally:
        for s in sides:
            s.stop()
    names = ("counter unmoved", "counter moved (= revision 3)") if moved else ("old", "new")
    lines = ["| one-edit sync | %s, median s | %s, median s | second/first, median of %d rounds (min–max) |" % (
        names[0], names[1], rounds), "|---|---:|---:|---|"]
    for what, x, y in (("push", a[0], b[0]), ("pull", a[1], b[1])):
        ratios = sorted(q / p for p, q in zip(x, y))
        lines.append("| %s | %.3f | %.3f | %.2f (%.2f–%.2f) |" % (
            what, statistics.median(x), statistics.median(y), statistics.median(ratios), ratios[0], ratios[-1]))
    binaries = [os.path.abspath(new)] if moved else [os.path.abspath(old), os.path.abspath(new)]
    return "\n".join(["binary: %s" % b for b in binaries] + [""] + lines) + "\n"
