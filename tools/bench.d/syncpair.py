"""The one-edit sync of two receipt binaries side by side (tools/bench --sync-pair OLD).

Each binary gets its own server and two vaults, both filled like the bench's sync steps (the corpus
imported with --no-index into vault A, synced, pulled into vault B). Then, round after round and
binary after binary (A B A B ...), one receipt of vault A is edited, vault A syncs (the push) and
vault B syncs (the pull), each timed as a whole process. On a shared machine only what was measured
side by side compares: the result is each binary's median and the median of the per-round ratios.
"""
import json
import os
import socket
import statistics
import subprocess
import time


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
        self.rid = json.loads(self.run("list", "--json", vault=self.va))[0]["id"]

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
    sides = [Side("old", old, work, env), Side("new", new, work, env)]
    try:
        for s in sides:
            log("sync pair: filling %s (%s)" % (s.name, s.binary))
            s.start(files)
        for i in range(rounds):
            for s in sides:
                s.round()
            log("round %d: push old %.3f new %.3f, pull old %.3f new %.3f" % (
                i + 1, sides[0].push[-1], sides[1].push[-1], sides[0].pull[-1], sides[1].pull[-1]))
    finally:
        for s in sides:
            s.stop()
    old_side, new_side = sides
    lines = ["| one-edit sync | old median s | new median s | new/old, median of %d rounds (min–max) |" % rounds,
             "|---|---:|---:|---|"]
    for what, a, b in (("push", old_side.push, new_side.push), ("pull", old_side.pull, new_side.pull)):
        ratios = sorted(y / x for x, y in zip(a, b))
        lines.append("| %s | %.3f | %.3f | %.2f (%.2f–%.2f) |" % (
            what, statistics.median(a), statistics.median(b), statistics.median(ratios), ratios[0], ratios[-1]))
    return "\n".join(["old: %s" % os.path.abspath(old), "new: %s" % os.path.abspath(new), ""] + lines) + "\n"
