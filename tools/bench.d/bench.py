#!/usr/bin/env python3
"""Times receipt against borg, restic, git-annex and cp/sha256sum on one generated corpus.

Every step runs each tool in turn (warm cache; an untimed `sync` first; peers end with a timed
`sync`, receipt relies on its own fsyncs) under /usr/bin/time -v for the peak RSS, then `du -sb`
measures the repository.  Results: a Markdown table and one line per target of issue 6, printed
and written to --out (default WORK/results.md, plus WORK/results.json).
Nothing outside WORK is written except the receipt release build (.build-release/ in the
repository); the sync server listens on 127.0.0.1 only.
"""
import argparse
import tempfile
import csv
import itertools
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import corpus  # noqa: E402
import extract  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
TOOLS = ("cp", "receipt", "borg", "restic", "git-annex", "cp+sha256sum")
STEPS = ("import", "reimport", "verify", "export", "gc", "auto", "manifest", "extract", "sync")
PACKAGES = {"borg": "borgbackup", "restic": "restic", "git-annex": "git-annex", "git": "git",
            "/usr/bin/time": "time", "sha256sum": "coreutils"}
MB = 1e6
RUN_TAG = ".made-by-tools-bench"


class Failed(Exception):
    pass


class NotAvailable(Exception):
    pass


def du(path):
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def rmtree(path):
    if os.path.isdir(path):
        subprocess.run(["chmod", "-R", "u+w", path])  # git-annex leaves read-only folders
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        os.remove(path)


def fresh_dir(path, tag):
    """Empties path, refusing to delete a non-empty folder this script did not create."""
    if os.path.isdir(path) and os.listdir(path) and not os.path.exists(os.path.join(path, tag)):
        sys.exit("bench: refusing to wipe %s (not made by tools/bench)" % path)
    rmtree(path)
    os.makedirs(path)
    open(os.path.join(path, tag), "w").close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Measure:
    """Collects the timed commands of one (step, tool) cell."""

    def __init__(self, bench, tool):
        self.bench, self.tool, self.seconds, self.cpu, self.rss, self.note = bench, tool, 0.0, 0.0, 0, ""

    def time(self, argv, **kw):
        seconds, rss, cpu = self.bench.run(argv, self.tool, **kw)
        self.seconds, self.cpu, self.rss = self.seconds + seconds, self.cpu + cpu, max(self.rss, rss)

    def setup(self, argv, **kw):
        return self.bench.run(argv, self.tool, **kw)


class Bench:
    def __init__(self, a):
        self.a, self.work = a, os.path.abspath(a.work)
        self.run_dir, self.rows, self.rss, self.count = os.path.join(self.work, "run"), [], {}, 0
        self.logs = os.path.join(self.run_dir, "logs")
        self.files = os.path.join(self.work, "corpus", "files")
        self.tools = a.tools.split(",")
        self.receipt, self.commands, self.why_not = None, set(), "not requested"
        home = os.path.join(self.work, "home")
        self.env = dict(os.environ, HOME=home, XDG_CACHE_HOME=home + "/.cache", XDG_CONFIG_HOME=home + "/.config",
                        XDG_DATA_HOME=home + "/.local/share", BORG_BASE_DIR=home + "/borg",
                        BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK="yes", BORG_RELOCATED_REPO_ACCESS_IS_OK="yes",
                        RESTIC_REPOSITORY=self.path("restic"), RESTIC_PASSWORD_FILE=home + "/restic-password",
                        RESTIC_CACHE_DIR=home + "/.cache/restic", GIT_CONFIG_NOSYSTEM="1",
                        GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@localhost",
                        GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@localhost")
        self.env.pop("RECEIPT_VAULT", None)

    @classmethod
    def fresh(cls, a):
        """A Bench with WORK/run emptied and its logs and HOME folders made."""
        b = cls(a)
        os.makedirs(b.work, exist_ok=True)
        fresh_dir(b.run_dir, RUN_TAG)
        os.makedirs(b.logs)
        os.makedirs(b.env["HOME"], exist_ok=True)
        return b

    def path(self, *parts):
        return os.path.join(self.run_dir, *parts)

    def log(self, msg):
        print(time.strftime("[%H:%M:%S] ") + msg, file=sys.stderr, flush=True)

    # -------------------------------------------------------------- running commands
    def run(self, argv, tool, cwd=None, stdin=None, out=None, timeout=None, env=None):
        """Runs argv under /usr/bin/time -v; returns (seconds, peak RSS bytes, CPU seconds) or raises."""
        self.count += 1
        base = os.path.join(self.logs, "%03d-%s-%s" % (self.count, tool, os.path.basename(argv[0])))
        with open(base + ".cmd", "w") as f:
            f.write(" ".join(argv) + "\n")
        with open(out or base + ".out", "wb") as fo, open(base + ".err", "wb") as fe:
            t0 = time.monotonic()
            p = subprocess.Popen(["/usr/bin/time", "-v", "-o", base + ".time"] + argv, cwd=cwd, env=env or self.env,
                                 stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                                 stdout=fo, stderr=fe, start_new_session=True)
            try:
                p.communicate(stdin, timeout=timeout or self.a.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                raise Failed("%s timed out after %d s" % (" ".join(argv[:3]), timeout or self.a.timeout))
            seconds = time.monotonic() - t0
        with open(base + ".time") as f:
            report = f.read()
        # The command's own wall time as /usr/bin/time measured it (fork to exit, 10 ms steps): the
        # clock around Popen also counts this script starting /usr/bin/time, which added 30-55 ms
        # to cells of 30-60 ms on this VM. The clock above stays as the fallback.
        m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", report)
        if m:
            parts = [float(x) for x in m.group(1).split(":")]
            seconds = sum(x * 60 ** i for i, x in enumerate(reversed(parts)))
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
        rss = int(m.group(1)) * 1024 if m else 0
        cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", report))
        if tool == "receipt":
            words = [w for w in argv[1:] if not w.startswith("-") and "/" not in w]
            key = " ".join(words[:2] if words[:1] == ["server"] else words[:1]) or "--help"
            self.rss[key] = max(self.rss.get(key, 0), rss)
        if p.returncode != 0:
            lines = []
            for name in (base + ".err", out or base + ".out"):
                with open(name, errors="replace") as f:
                    lines += [ln.strip() for ln in f if ln.strip()]
            last = ([ln for ln in lines if "error:" in ln.lower()] or lines or [""])[-1]
            if tool == "receipt" and re.search(r"unexpected argument|unknown option|unknown (sub)?command", last, re.I):
                raise NotAvailable("`%s` is not supported yet: %s" % (" ".join(argv[1:4]), last[:200]))
            raise Failed("`%s` exited %d: %s (log %s.err)" % (" ".join(argv[:3]), p.returncode, last[:200], base))
        return seconds, rss, cpu

    def rc(self, vault, *args):
        return [self.receipt] + (["--vault", vault] if vault else []) + list(args)

    def need(self, *commands):
        if self.receipt is None:
            raise NotAvailable(self.why_not)
        missing = [c for c in commands if self.commands is not None and c not in self.commands]
        if missing:
            raise NotAvailable("receipt has no `%s` command yet" % "`, `".join(missing))

    def measure(self, step, tool, body, disk=None, repeat=False, reset=None):
        """One cell; with repeat, the best of --repeat runs (reset() runs before each)."""
        if tool not in self.tools:
            return None
        row = {"step": step, "tool": tool, "seconds": None, "cpu": None, "rss": None, "disk": None, "note": ""}
        try:
            best = None
            for _ in range(self.a.repeat if repeat else 1):
                if reset:
                    reset()
                subprocess.run(["sync"])
                m = Measure(self, tool)
                body(m)
                if tool != "receipt":
                    m.time(["sync"])
                best = m if best is None or m.seconds < best.seconds else best
            m = best
            row.update(seconds=m.seconds, cpu=m.cpu, rss=m.rss, note=m.note, disk=du(disk) if disk else None)
        except NotAvailable as e:
            row["note"] = "n/a: %s" % e
        except (Failed, OSError, ValueError, KeyError) as e:
            row["note"] = "FAILED: %s" % e
        self.rows.append(row)
        self.log("%-28s %-13s %s %s" % (step, tool, "%8.2f s" % row["seconds"] if row["seconds"] is not None
                                         else "       -  ", row["note"]))
        return row

    # -------------------------------------------------------------- preparation
    def install_peers(self):
        missing = sorted({pkg for cmd, pkg in PACKAGES.items() if not shutil.which(cmd)})
        if not missing:
            return
        if os.geteuid() != 0:
            sys.exit("bench: missing %s; run as root or `apt-get install -y %s`" % (missing, " ".join(missing)))
        self.log("installing %s" % " ".join(missing))
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        cmd = ["apt-get", "install", "-y"] + missing
        if subprocess.run(cmd, env=env).returncode != 0:
            subprocess.run(["apt-get", "update"], env=env, check=True)
            subprocess.run(cmd, env=env, check=True)

    def build_receipt(self):
        if "receipt" not in self.tools:
            return
        if self.a.receipt:
            self.receipt = os.path.abspath(self.a.receipt)
        elif not shutil.which("swift"):
            self.why_not = "swift is not installed (pass --receipt PATH)"
            return
        else:
            for attempt in range(3):  # a tree others are editing may be mid-change: retry twice
                self.log("building receipt (release, scratch .build-release)")
                try:
                    self.run(["nice", "swift", "build", "-c", "release", "--product", "receipt",
                              "--scratch-path", ".build-release", "--static-swift-stdlib"], "build", cwd=REPO, timeout=3600,
                             env=os.environ)  # the user's own SwiftPM caches and mirrors
                    self.receipt = os.path.join(REPO, ".build-release", "release", "receipt")
                    break
                except Failed as e:
                    self.log("build failed: %s" % e)
                    self.why_not = "release build failed (%s)" % str(e).rsplit("(", 1)[-1].rstrip(")")
                    time.sleep(60 if attempt < 2 else 0)
            else:
                return
        if not os.access(self.receipt, os.X_OK):
            self.receipt, self.why_not = None, "%s is not an executable" % self.receipt
            return
        out = os.path.join(self.logs, "receipt-help.txt")
        try:
            self.run([self.receipt, "--help"], "receipt", out=out)
            with open(out) as f:
                text = f.read().split("SUBCOMMANDS:", 1)[1]
            self.commands = set(re.findall(r"^  ([a-z][a-z-]*)(?:\s|$)", text, re.M))
        except (Failed, NotAvailable, IndexError) as e:  # unknown: each step finds out by running
            self.commands = None
            self.log("receipt --help did not list subcommands (%s); probing each command" % e)

    def warm(self, root):
        for d, _, names in os.walk(root):
            for n in names:
                with open(os.path.join(d, n), "rb") as f:
                    while f.read(1 << 20):
                        pass

    def versions(self):
        out = {}
        for tool, cmd in (("borg", ["borg", "--version"]), ("restic", ["restic", "version"]),
                          ("git-annex", ["git", "annex", "version", "--raw"]),
                          ("receipt", ["git", "-C", REPO, "log", "-1", "--format=commit %h (%cd)", "--date=iso"]),
                          ("dirty", ["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no", "--",
                                     "Sources", "Package.swift"])):
            try:
                out[tool] = subprocess.run(cmd, capture_output=True, text=True, env=self.env,
                                           timeout=30).stdout.strip().splitlines()[0]
            except (OSError, IndexError, subprocess.SubprocessError):
                out[tool] = "?"
        if self.a.receipt:
            out["receipt"] = "binary %s" % self.receipt
        elif out.pop("dirty") != "?":
            out["receipt"] += " plus uncommitted changes"
        out.pop("dirty", None)
        return out

    # -------------------------------------------------------------- the steps
    def step_import(self):
        files, run = self.files, self.path

        def cp(m):
            m.time(["cp", "-r", files, run("cp-floor")])

        def receipt(m):
            self.need("init", "import")
            m.time(self.rc(run("vault"), "init", "--compression", "none"))
            # --no-index: the peers store bytes only; text extraction is timed by its own step.
            m.time(self.rc(run("vault"), "import", files, "--no-index", "--json"), out=run("import.json"))

        def borg(m):
            m.time(["borg", "init", "-e", "none", run("borg")])
            m.time(["borg", "create", run("borg") + "::all", "."], cwd=files)

        def restic(m):
            m.time(["restic", "init"])
            m.time(["restic", "backup", files])

        def annex(m):
            os.makedirs(run("annex"))
            m.setup(["cp", "-r", files, run("annex", "files")])
            m.setup(["sync"])
            m.time(["git", "init", "-q"], cwd=run("annex"))
            m.time(["git", "annex", "init", "bench"], cwd=run("annex"))
            m.time(["git", "annex", "add", "--quiet", "files"], cwd=run("annex"))
            m.time(["git", "commit", "-q", "-m", "import"], cwd=run("annex"))

        def cpsha(m):
            m.time(["cp", "-r", files, run("cp-sha")])
            m.time(["sh", "-c", "find . -type f -print0 | sort -z | xargs -0 sha256sum > ../cp-sha.sums"],
                   cwd=run("cp-sha"))

        for tool, body, disk in (("cp", cp, "cp-floor"), ("receipt", receipt, "vault"), ("borg", borg, "borg"),
                                 ("restic", restic, "restic"), ("git-annex", annex, "annex"),
                                 ("cp+sha256sum", cpsha, "cp-sha")):
            self.measure("import", tool, body, run(disk))
        rmtree(run("cp-floor"))

    def step_reimport(self):
        def receipt(m):
            self.need("import")
            m.time(self.rc(self.path("vault"), "import", self.files, "--no-index"))

        self.measure("re-import (unchanged)", "receipt", receipt, self.path("vault"), repeat=True)
        self.measure("re-import (unchanged)", "restic", lambda m: m.time(["restic", "backup", self.files]),
                     repeat=True)
        self.archives = 0

        def borg(m):  # one more archive per run: prune --keep-last 1 in the gc step removes them all
            self.archives += 1
            m.time(["borg", "create", self.path("borg") + "::again%d" % self.archives, "."], cwd=self.files)

        self.measure("re-import (unchanged)", "borg", borg, repeat=True)

    def step_verify(self):
        def receipt(m):
            self.need("fsck")
            m.time(self.rc(self.path("vault"), "fsck"))

        for tool, body in (
                ("receipt", receipt),
                ("borg", lambda m: m.time(["borg", "check", "--verify-data", self.path("borg")])),
                ("restic", lambda m: m.time(["restic", "check", "--read-data"])),
                ("git-annex", lambda m: m.time(["git", "annex", "fsck", "--quiet"], cwd=self.path("annex"))),
                ("cp+sha256sum", lambda m: m.time(["sha256sum", "-c", "--quiet", "../cp-sha.sums"],
                                                  cwd=self.path("cp-sha")))):
            self.measure("verify (full re-hash)", tool, body, repeat=True)

    def step_export(self):
        # Every run writes a new folder, left for the cleanup at the end of the run. On this VM's ext4
        # (no journal), creating files in the minute after many were deleted runs ext4's
        # recently_deleted() for every new inode (~0.7 ms each here): removing the last run's output
        # before each run made every receipt run pay that and let cp's first run escape it, and
        # removing them all here would make the next step's peers pay it.
        runs = itertools.count()
        current = {}

        def fresh(tool):
            current[tool] = self.path("export-%s-%d" % (tool, next(runs)))

        def receipt(m):
            self.need("export")
            m.time(self.rc(self.path("vault"), "export", current["receipt"]))

        def borg(m):
            os.makedirs(current["borg"])
            m.time(["borg", "extract", self.path("borg") + "::all"], cwd=current["borg"])

        bodies = {"receipt": receipt, "borg": borg,
                  "restic": lambda m: m.time(["restic", "restore", "latest", "--target", current["restic"]]),
                  "cp": lambda m: m.time(["cp", "-r", self.files, current["cp"]])}
        for tool in ("cp", "receipt", "borg", "restic"):
            row = self.measure("export (everything)", tool, bodies[tool], repeat=True,
                               reset=lambda: fresh(tool))
            if row and row["seconds"] is not None:
                try:
                    row["disk"] = du(current[tool])
                    row["note"] = "%d files" % sum(len(n) for _, _, n in os.walk(current[tool]))
                except (OSError, subprocess.CalledProcessError) as e:
                    row["note"] = "FAILED: %s" % e

    def step_gc(self, manifest_rows):
        removed = [r["path"][len("files/"):] for r in manifest_rows[::2]]
        kept = [r["path"][len("files/"):] for r in manifest_rows[1::2]]
        gone = set(removed)

        def receipt(m):
            self.need("rm", "gc")
            with open(self.path("import.json")) as f:
                imported = json.load(f)["imported"]
            ids = [e["id"] for e in imported
                   if os.path.relpath(os.path.join(self.files, e["path"]), self.files) in gone]
            if len(ids) != len(removed):
                raise Failed("import --json named %d of the %d files to remove" % (len(ids), len(removed)))
            for i in range(0, len(ids), 200):
                m.setup(self.rc(self.path("vault"), "rm", *ids[i:i + 200]))
            m.time(self.rc(self.path("vault"), "gc", "--grace", "0"))

        def borg(m):
            m.setup(["borg", "create", "--paths-from-stdin", self.path("borg") + "::half"], cwd=self.files,
                    stdin="\n".join(kept).encode())
            m.time(["borg", "prune", "--keep-last", "1", self.path("borg")])
            m.time(["borg", "compact", self.path("borg")])

        def restic(m):
            with open(self.path("kept.txt"), "w") as f:
                f.write("".join(os.path.join(self.files, p) + "\n" for p in kept))
            m.setup(["restic", "backup", "--files-from-verbatim", self.path("kept.txt")])
            m.time(["restic", "forget", "--keep-last", "1", "--group-by", "host"])
            m.time(["restic", "prune"])

        def annex(m):
            with open(self.path("removed.txt"), "w") as f:
                f.write("".join("files/%s\n" % p for p in removed))
            m.setup(["git", "rm", "-q", "--pathspec-from-file=" + self.path("removed.txt")], cwd=self.path("annex"))
            m.setup(["git", "commit", "-q", "-m", "remove half"], cwd=self.path("annex"))
            m.time(["git", "annex", "unused", "--quiet"], cwd=self.path("annex"))
            m.time(["git", "annex", "dropunused", "--quiet", "--force", "all"], cwd=self.path("annex"))

        for tool, body, disk in (("receipt", receipt, "vault"), ("borg", borg, "borg"),
                                 ("restic", restic, "restic"), ("git-annex", annex, "annex")):
            self.measure("gc (half removed)", tool, body, self.path(disk))

    def step_auto(self, total):
        def receipt(m):
            self.need("init", "import")
            m.time(self.rc(self.path("vault-auto"), "init", "--compression", "auto"))
            m.time(self.rc(self.path("vault-auto"), "import", self.files, "--no-index"))

        def borg(m):
            m.time(["borg", "init", "-e", "none", self.path("borg-lzma")])
            m.time(["borg", "create", "-C", "auto,lzma,6", self.path("borg-lzma") + "::all", "."], cwd=self.files)

        for tool, body, disk in (("receipt", receipt, "vault-auto"), ("borg", borg, "borg-lzma")):
            row = self.measure("compressed import", tool, body, self.path(disk))
            if row and row["disk"]:
                row["note"] = "%s stored %.1f %% of corpus" % ("auto" if tool == "receipt" else "-C auto,lzma,6",
                                                               100.0 * row["disk"] / total)
            rmtree(self.path(disk))

    def step_manifest(self, small):
        rows = small["rows"]
        vault = self.path("vault-manifest")

        def imp(m):
            self.need("init", "import")
            m.setup(self.rc(vault, "init", "--compression", "none"))
            # The import alone (its text is indexed, and timed, by the next step).
            m.time(self.rc(vault, "import", "--manifest", os.path.join(self.work, "small", "manifest.csv"), "--no-index"))

        def lst(m):
            self.need("list")
            runs = [m.setup(self.rc(vault, "list", "--from", "2021-01-01", "--to", "2021-03-31"),
                            out=self.path("list.txt")) for _ in range(3)]
            m.seconds, m.rss, m.cpu = min(runs)
            with open(self.path("list.txt"), "rb") as f:
                m.note = "best of 3; %d output lines" % f.read().count(b"\n")

        self.measure("manifest import ({:,} rows)".format(rows), "receipt", imp, vault)
        self.measure("list --from --to ({:,} rows)".format(rows), "receipt", lst)
        self.step_index_search(vault, rows)

    def step_index_search(self, vault, rows):
        """Text extraction of the manifest vault (plain-text receipts), then search latency over it:
        whole `receipt search` processes, as a user waits for them."""
        queries = ["tesco", "starbucks", "sourdough", "croissant", "ibuprofen", "starb*", "pharm*",
                   '"flat white"', '"coffee beans"', "contactless warranty", "cvs ibuprofen", "12.99",
                   "deutsche bahn ticket", "zzznotthere", "bookcase ikea", "premium allianz"]

        def idx(m):
            self.need("index")
            m.time(self.rc(vault, "index", "--json"), out=self.path("index.json"))
            with open(self.path("index.json")) as f:
                done = json.load(f)
            m.note = "%d blobs extracted, %.0f blobs/s" % (done["extracted"], done["extracted"] / max(m.seconds, 1e-9))

        def search(m):
            self.need("search")
            # Peak RSS and CPU from one run of each query under /usr/bin/time; the latencies from the
            # monotonic clock around the process alone (spawned directly, no /usr/bin/time between),
            # since /usr/bin/time's wall clock has 10 ms steps: too coarse for a 50 ms p95.
            runs = [m.setup(self.rc(vault, "search", q, "--limit", "20", "--json"), out=self.path("search.json"))
                    for q in queries]
            seconds = []
            for _ in range(3):
                for q in queries:
                    t0 = time.perf_counter()
                    subprocess.run(self.rc(vault, "search", q, "--limit", "20", "--json"), env=self.env, check=True,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    seconds.append(time.perf_counter() - t0)
            seconds.sort()
            p95 = seconds[min(len(seconds) - 1, int(round(0.95 * len(seconds))) - 1)]
            m.seconds, m.rss, m.cpu = p95, max(r[1] for r in runs), max(r[2] for r in runs)
            m.note = "p95 of %d searches (%d queries × 3), whole process; p50 %.1f ms, max %.1f ms" % (
                len(seconds), len(queries), 1000 * seconds[len(seconds) // 2], 1000 * seconds[-1])

        self.measure("index ({:,} rows with text)".format(rows), "receipt", idx)
        self.measure("search p95 ({:,} rows with text)".format(rows), "receipt", search)

    def step_sync(self, total):
        steps = ("sync push (whole corpus)", "sync pull (into empty vault)", "incremental sync push (1 edit)",
                 "incremental sync pull (1 edit)")
        server = None
        try:
            self.need("server", "remote", "sync", "edit", "list")
            va, vb, data = self.path("sync-a"), self.path("sync-b"), self.path("server")
            port = free_port()
            url = "http://127.0.0.1:%d" % port
            self.run(self.rc(None, "server", "account-add", "bench", "--data", data, "--json"), "receipt",
                     out=self.path("account.json"))
            with open(self.path("account.json")) as f:
                token = json.load(f)["token"]
            with open(self.path("logs", "server.err"), "wb") as err:
                server = subprocess.Popen(self.rc(None, "server", "run", "--data", data, "--listen",
                                                  "127.0.0.1:%d" % port), env=self.env, stdout=err, stderr=err,
                                          start_new_session=True)
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if server.poll() is not None:
                        raise Failed("receipt server run exited %d (logs/server.err)" % server.returncode)
                    time.sleep(0.1)
            else:
                raise Failed("receipt server did not listen on %s within 30 s" % url)
            for v in (va, vb):
                self.run(self.rc(v, "init", "--compression", "none"), "receipt")
                self.run(self.rc(v, "remote", "set", url, "--account", "bench", "--token", token), "receipt")
            self.run(self.rc(va, "import", self.files, "--no-index"), "receipt")
            push = self.measure(steps[0], "receipt", lambda m: m.time(self.rc(va, "sync")))
            pull = self.measure(steps[1], "receipt", lambda m: m.time(self.rc(vb, "sync")), vb)
            for row in (push, pull):
                if row["seconds"]:
                    row["note"] = "%.0f MB/s" % (total / MB / row["seconds"])
            self.run(self.rc(va, "list", "--json"), "receipt", out=self.path("list.json"))
            with open(self.path("list.json")) as f:
                rid = json.load(f)[0]["id"]
            edits = itertools.count(1)

            def edit(push=False):
                # A new note each time, so every repeated run has exactly one change to carry.
                self.run(self.rc(va, "edit", rid, "--note", "edited by tools/bench %d" % next(edits)), "receipt")
                if push:
                    self.run(self.rc(va, "sync"), "receipt")
            self.measure(steps[2], "receipt", lambda m: m.time(self.rc(va, "sync")), repeat=True, reset=edit)
            self.measure(steps[3], "receipt", lambda m: m.time(self.rc(vb, "sync")), repeat=True,
                         reset=lambda: edit(push=True))
        except (NotAvailable, Failed, OSError, ValueError, KeyError) as e:
            done = {r["step"] for r in self.rows}
            for s in steps:
                if s not in done:
                    self.rows.append({"step": s, "tool": "receipt", "seconds": None, "cpu": None, "rss": None,
                                      "disk": None,
                                      "note": ("n/a: %s" if isinstance(e, NotAvailable) else "FAILED: %s") % e})
        finally:
            if server:
                try:
                    with open("/proc/%d/status" % server.pid) as f:
                        hwm = re.search(r"VmHWM:\s+(\d+) kB", f.read())
                    self.rss["server run"] = int(hwm.group(1)) * 1024
                except (OSError, AttributeError):
                    pass
                server.send_signal(signal.SIGTERM)
                try:
                    server.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    server.wait()

    # -------------------------------------------------------------- report
    def cell(self, step, tool, key="seconds"):
        for r in self.rows:
            if r["step"].startswith(step) and r["tool"] == tool:
                return r[key]
        return None

    def table(self):
        out = ["| step | tool | seconds | × best peer | CPU s | peak RSS MB | on disk MB | notes |",
               "|---|---|---:|---:|---:|---:|---:|---|"]
        for step in dict.fromkeys(r["step"] for r in self.rows):
            rows = [r for r in self.rows if r["step"] == step]
            peers = [r["seconds"] for r in rows if r["tool"] != "receipt" and r["seconds"] is not None]
            best = min(peers) if peers else None
            for r in rows:
                s = r["seconds"]
                out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    step, r["tool"], "%.2f" % s if s is not None else "–",
                    "%.2f" % (s / best) if s is not None and best else "–",
                    "%.1f" % r["cpu"] if r["cpu"] is not None else "–",
                    "%.0f" % (r["rss"] / MB) if r["rss"] else "–",
                    "%.0f" % (r["disk"] / MB) if r["disk"] else "–", r["note"].replace("|", "/")))
        return out

    def targets(self, big, small):
        c = self.cell
        lines = []

        def f(x, fmt="%.2f s"):
            return "–" if x is None else fmt % x

        def target(name, inputs, ok, figures):
            if any(x is None for x in inputs):
                lines.append("- %s: NOT met (not measured: %s)" % (name, figures))
            else:
                lines.append("- %s: %s (%s)" % (name, "met" if ok() else "NOT met", figures))

        r, b, cp = c("import", "receipt"), c("import", "borg"), c("import", "cp")
        target("import ≤ ½ borg and ≤ 1.5× cp -r + sync", (r, b, cp), lambda: r <= b / 2 and r <= 1.5 * cp,
               "receipt %s, borg %s, cp+sync %s" % (f(r), f(b), f(cp)))
        r, rs = c("re-import", "receipt"), c("re-import", "restic")
        target("re-import ≤ restic's cached re-backup", (r, rs), lambda: r <= rs,
               "receipt %s, restic %s" % (f(r), f(rs)))
        r, b = c("verify", "receipt"), c("verify", "borg")
        rate = big["unique_bytes"] / 1e9 / r if r else None
        target("fsck ≤ ½ borg check --verify-data and ≥ 1 GB/s", (r, b), lambda: r <= b / 2 and rate >= 1,
               "receipt %s = %s of unique bytes, borg %s" % (f(r), f(rate, "%.2f GB/s"), f(b)))
        r, b = c("gc", "receipt"), c("gc", "borg")
        target("gc ≤ ¼ borg prune + compact", (r, b), lambda: r <= b / 4, "receipt %s, borg %s" % (f(r), f(b)))
        r, cp = c("export", "receipt"), c("export", "cp")
        target("export ≤ 1.2× cp -r", (r, cp), lambda: r <= 1.2 * cp, "receipt %s, cp -r %s" % (f(r), f(cp)))
        r, b, d = c("compressed import", "receipt"), c("compressed import", "borg"), \
            c("compressed import", "receipt", "disk")
        pct = d and 100.0 * d / big["bytes"]
        target("--compression auto ≥ 10× faster than borg lzma,6 and ≤ 85 % stored", (r, b, d),
               lambda: r * 10 <= b and pct <= 85,
               "receipt %s storing %s, borg %s" % (f(r), f(pct, "%.1f %%"), f(b)))
        worst = max(self.rss.items(), key=lambda kv: kv[1]) if self.rss else None
        target("peak RSS ≤ 100 MB for every receipt command", (worst,), lambda: worst[1] <= 100 * MB,
               worst and "worst: `%s` %.0f MB" % (worst[0], worst[1] / MB) or "no receipt command ran")
        m, ls = c("manifest import", "receipt"), c("list --from", "receipt")
        target("{:,}-row manifest import < 5 s and dated list < 0.3 s".format(small["rows"]), (m, ls),
               lambda: m < 5 and ls < 0.3, "import %s, list %s" % (f(m), f(ls)))
        s = c("search p95", "receipt")
        target("search p95 < 50 ms over the {:,}-row vault with text".format(small["rows"]), (s,), lambda: s < 0.05,
               "p95 %s" % f(s, "%.3f s"))
        lines.append(extract.figures(self))
        p, q = c("sync push", "receipt"), c("sync pull", "receipt")
        ip, iq = c("incremental sync push", "receipt"), c("incremental sync pull", "receipt")
        rate = big["bytes"] / MB / (p + q) if p and q else None
        target("sync vault → server → vault ≥ 150 MB/s; one edit < 100 ms each way", (p, q, ip, iq),
               lambda: rate >= 150 and ip < 0.1 and iq < 0.1,
               "push %s + pull %s = %s end to end; edit push %s, pull %s"
               % (f(p), f(q), f(rate, "%.0f MB/s"), f(ip, "%.3f s"), f(iq, "%.3f s")))
        return lines


def main():
    ap = argparse.ArgumentParser(prog="tools/bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/receipt-bench", help="work folder (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="~50 MB corpus and 10,000 manifest rows (smoke test)")
    ap.add_argument("--receipt", metavar="PATH", help="use this receipt binary instead of a release build")
    ap.add_argument("--out", metavar="FILE", help="Markdown results (default WORK/results.md)")
    ap.add_argument("--tools", default=",".join(TOOLS), help="subset of %(default)s")
    ap.add_argument("--timeout", type=int, help="seconds per command (default 900, quick 180)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="best of N runs for the steps that can be repeated (re-import, verify, export, one-edit sync)")
    ap.add_argument("--steps", default=",".join(STEPS), metavar="sync,...",
                    help="run only these steps (default all: %(default)s); re-import, verify, export and gc "
                         "need import; `--steps sync --tools receipt` times the sync steps alone")
    ap.add_argument("--keep", action="store_true", help="keep repositories and vaults under WORK/run")
    ap.add_argument("--scale", action="store_true",
                    help="only how each command grows with a vault of 10,000 to 1,000,000 receipts, each beside the sqlite3 shell alone on the same rows (bench.d/scale.py, floor.py)")
    ap.add_argument("--sizes", default="10000,100000,1000000", metavar="N,N,...",
                    help="vault sizes for --scale (default %(default)s)")
    ap.add_argument("--skip", default="", metavar="index,sync",
                    help="with --scale: leave out text extraction and search (index), or the sync steps (sync)")
    ap.add_argument("--sync-pair", metavar="OLD",
                    help="only the one-edit sync, this receipt (--receipt or the release build) against the OLD "
                         "binary, round by round side by side (tools/bench.d/syncpair.py)")
    ap.add_argument("--rounds", type=int, default=10, metavar="N", help="rounds of --sync-pair (default %(default)s)")
    ap.add_argument("--web", action="store_true",
                    help="only the web view's page latency on a 10,000-receipt zone (tools/bench.d/web.py)")
    ap.add_argument("--extract", action="store_true",
                    help="only text extraction: born-digital PDFs/s and OCR pages/s of `receipt index` (bench.d/extract.py)")
    ap.add_argument("--baseline", metavar="PATH",
                    help="with --web: another receipt binary, measured side by side, request by request")
    ap.add_argument("--receipts", metavar="DIR",
                    help="only how well receipts are read: words, search by total and name, fields, OCR time beside "
                         "plain tesseract, on a folder of images with ground truth (bench.d/receipts.py)")
    ap.add_argument("--locale", metavar="LOCALE", help="with --receipts: the vault's locale (receipt config locale)")
    a = ap.parse_args()
    if a.receipts:
        import receipts
        b = Bench(a)
        os.makedirs(b.logs, exist_ok=True)
        b.build_receipt()
        if not b.receipt:
            sys.exit("bench: no receipt binary: %s" % b.why_not)
        text = receipts.run(b.receipt, os.path.abspath(a.receipts), os.path.join(a.work, "receipts"), a.locale, b.log)
        text = "## tools/bench --receipts, %s\n\nCommand: `%s`.\n\n%s" % (
            time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), " ".join(["tools/bench"] + sys.argv[1:]), text)
        print(text)
        with open(a.out or os.path.join(a.work, "receipts-results.md"), "w") as f:
            f.write(text)
        return
    if a.extract:
        a.timeout = a.timeout or 900
        b = Bench.fresh(a)
        b.build_receipt()
        extract.step(b, a.quick)
        text = "\n".join(["## tools/bench --extract, %s (%s)" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                                               b.versions()["receipt"]), ""]
                         + b.table() + ["", extract.figures(b)]) + "\n"
        print(text)
        with open(a.out or os.path.join(b.work, "extract-results.md"), "w") as f:
            f.write(text)
        return
    if a.web:
        import web
        b = Bench(a)
        os.makedirs(b.logs, exist_ok=True)
        b.build_receipt()
        text = web.run(b.receipt, tempfile.mkdtemp(prefix="web-", dir=os.makedirs(a.work, exist_ok=True) or a.work),
                       baseline=a.baseline and os.path.abspath(a.baseline))
        with open(a.out or os.path.join(a.work, "web-results.md"), "w") as f:
            f.write(text)
        return
    if a.sync_pair:
        import syncpair
        b = Bench(a)
        fresh_dir(b.run_dir, RUN_TAG)
        os.makedirs(b.logs)
        b.build_receipt()
        if not b.receipt:
            sys.exit("bench: no receipt binary: %s" % b.why_not)
        big = corpus.generate(os.path.join(b.work, "corpus"), "quick" if a.quick else "standard")
        text = syncpair.run(a.sync_pair, b.receipt, b.files, b.run_dir, max(a.rounds, 1), b.env, b.log)
        head = "## tools/bench --sync-pair, %s\n\nCorpus: %d files (%d unique blobs), imported with --no-index.\n" % (
            time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), big["files"], big["unique_blobs"])
        text = head + "Command: `%s`.\n\n%s" % (" ".join(["tools/bench"] + sys.argv[1:]), text)
        print(text)
        with open(a.out or os.path.join(b.work, "sync-pair-results.md"), "w") as f:
            f.write(text)
        return
    if a.scale:
        import scale
        try:
            sizes = sorted({int(x) for x in a.sizes.split(",")})
        except ValueError:
            ap.error("--sizes: expected numbers separated by commas, such as 10000,100000")
        if not sizes or sizes[0] < 1:
            ap.error("--sizes: every size must be 1 or more")
        a.timeout = a.timeout or 3600
        b = Bench.fresh(a)
        skip = [x for x in a.skip.split(",") if x]
        if set(skip) - {"index", "sync"}:
            ap.error("--skip: index, sync or both")
        text = scale.run(b, sizes, skip)
        print(text)
        out = a.out or os.path.join(b.work, "scale-results.md")
        with open(out, "w") as f:
            f.write(text)
        b.log("results in %s" % out)
        return
    a.timeout = a.timeout or (180 if a.quick else 900)
    if set(a.steps.split(",")) - set(STEPS):
        ap.error("--steps: unknown steps %s" % ", ".join(sorted(set(a.steps.split(",")) - set(STEPS))))
    unknown = set(a.tools.split(",")) - set(TOOLS)
    if unknown:
        ap.error("unknown tools: %s" % ", ".join(sorted(unknown)))
    b = Bench(a)
    t0 = time.time()
    os.makedirs(b.work, exist_ok=True)
    b.install_peers()
    fresh_dir(b.run_dir, RUN_TAG)
    os.makedirs(b.logs)
    os.makedirs(b.env["HOME"], exist_ok=True)
    with open(b.env["RESTIC_PASSWORD_FILE"], "w") as f:
        f.write("bench\n")
    b.log("corpus in %s" % b.work)
    big = corpus.generate(os.path.join(b.work, "corpus"), "quick" if a.quick else "standard")
    steps = set(a.steps.split(","))
    rows = 10000 if a.quick else 100000
    # The 100,000-file corpus only for the steps that read it.
    small = corpus.generate(os.path.join(b.work, "small"), rows=rows) if "manifest" in steps else {"rows": rows}
    with open(os.path.join(b.work, "corpus", "manifest.csv")) as f:
        manifest_rows = list(csv.DictReader(f))
    b.build_receipt()
    b.warm(b.files)
    for name, step in (("import", b.step_import), ("reimport", b.step_reimport), ("verify", b.step_verify),
                       ("export", b.step_export), ("gc", lambda: b.step_gc(manifest_rows)),
                       ("auto", lambda: b.step_auto(big["bytes"]))):
        if name in steps:
            step()
    if "manifest" in steps:
        b.warm(os.path.join(b.work, "small"))
    if "receipt" in b.tools:
        if "manifest" in steps:
            b.step_manifest(small)
        if "extract" in steps:
            extract.step(b, a.quick)
        if "sync" in steps:
            b.step_sync(big["bytes"])
    versions = b.versions()
    head = ["## tools/bench results, %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
            "Machine: %s, %d cores, Linux %s. Corpus: %d files, %.0f MB (%.0f MB unique), seed %d%s. "
            "Run took %.0f s." % (platform.node(), os.cpu_count(), platform.release(), big["files"],
                                  big["bytes"] / MB, big["unique_bytes"] / MB, big["seed"],
                                  " (--quick)" if a.quick else "", time.time() - t0),
            "Versions: " + "; ".join("%s %s" % kv for kv in versions.items()) + ".",
            "Command: `%s`." % " ".join(["tools/bench"] + sys.argv[1:]), ""]
    rss = ["", "receipt peak RSS by command (MB): " + ", ".join(
        "%s %.0f" % (k, v / MB) for k, v in sorted(b.rss.items(), key=lambda kv: -kv[1]))] if b.rss else []
    text = "\n".join(head + b.table() + rss + ["", "Targets (issue 6):", ""] + b.targets(big, small)) + "\n"
    print(text)
    out = a.out or os.path.join(b.work, "results.md")
    with open(out, "w") as f:
        f.write(text)
    with open(os.path.join(b.work, "results.json"), "w") as f:
        json.dump({"corpus": big, "small": small, "rows": b.rows, "rss": b.rss, "versions": versions}, f, indent=1)
    if not a.keep:
        for name in os.listdir(b.run_dir):
            if name not in ("logs", RUN_TAG):
                rmtree(os.path.join(b.run_dir, name))
    b.log("results in %s" % out)


if __name__ == "__main__":
    main()
