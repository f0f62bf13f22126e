#!/usr/bin/python3
"""The init process of the User-mode Linux guests of tools/powerloss (the host's root through hostfs).

Its job is named by the environment variable PLJOB (the kernel hands init every unknown `KEY=VALUE` of
its command line): a JSON file written by tools/powerloss. Two modes:

  record  ubda = the log, ubdb = the data device. dm-log-writes between them; mkfs and the workload
          run on it, with a mark before ("start-N") and after ("done-N") each command, and the vault's
          state (the oracle) saved after each "done" mark.
  check   ubda = the log, ubdb = a zeroed replay target, ubdc = copy-on-write space. The log is
          replayed entry by entry onto ubdb; at each chosen durable point a throw-away snapshot of
          ubdb is mounted and checked, then dropped, so the replay goes on from an untouched image.

Whatever happens, it writes WORK/<mode>.json ({"ok", "error", ...}) and powers the guest off.
"""
import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logwrites  # noqa: E402

os.environ["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
ALLOWED_FSCK_KINDS = {"orphan-blob", "stale-interim"}


def sh(*argv, check=True, env=None, timeout=300):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.decode(errors='replace').strip()}")
    return r


def load_modules(moddir, names):
    deps = {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            mod, _, rest = line.partition(":")
            deps[os.path.basename(mod)[:-3]] = [mod] + rest.split()
    loaded = set()
    for name in names:
        for path in reversed(deps[name]):   # dependencies first
            if path not in loaded:
                sh("insmod", os.path.join(moddir, path), check=False)
                loaded.add(path)


def sectors(dev):
    return int(sh("blockdev", "--getsz", dev).stdout)


def dm_create(name, table):
    sh("dmsetup", "create", name, "--table", table)
    sh("dmsetup", "mknodes", name)
    return "/dev/mapper/" + name


def mkfs(fs, dev):
    if fs == "ext4":
        sh("mkfs.ext4", "-F", "-q", "-E", "nodiscard", dev)
    elif fs == "xfs":
        sh("mkfs.xfs", "-f", "-q", "-K", dev)
    else:
        sh("mkfs.btrfs", "-f", "-q", "-K", dev)


def fs_check(fs, dev):
    """The file system's own checker, read-only; returns None when clean, else its complaint."""
    argv = {"ext4": ["e2fsck", "-fn", dev], "xfs": ["xfs_repair", "-n", dev],
            "btrfs": ["btrfs", "check", "--readonly", dev]}[fs]
    r = sh(*argv, check=False)
    if r.returncode == 0:
        return None
    return f"{argv[0]} exited {r.returncode}: " + (r.stdout + r.stderr).decode(errors="replace").strip()[-600:]


class Receipt:
    def __init__(self, job):
        self.binary = job["binary"]
        self.env = dict(os.environ, HOME=job["work"] + "/home")
        self.preload = job.get("preload")

    def run(self, vault, args, preload=False, timeout=120):
        env = dict(self.env)
        if preload and self.preload:
            env["LD_PRELOAD"] = self.preload
        r = sh(self.binary, "--vault", vault, "--json", *args, check=False, env=env, timeout=timeout)
        return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace").strip()

    def must(self, vault, args, preload=False):
        code, out, err = self.run(vault, args, preload)
        if code != 0:
            raise RuntimeError(f"receipt {' '.join(args)} exited {code}: {err}")
        return json.loads(out) if out.strip() else None

    def state(self, vault):
        """The vault's receipts as the oracle compares them: sorted by id, attachments by sha256."""
        receipts = self.must(vault, ["list"])
        for r in receipts:
            r["attachments"] = sorted(r["attachments"], key=lambda a: a["sha256"])
        return sorted(receipts, key=lambda r: r["id"])

    def server(self, job, data):
        host, port = "127.0.0.1", job["port"]
        proc = subprocess.Popen([self.binary, "server", "run", "--data", data, "--listen", f"{host}:{port}"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=self.env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the sync server exited {proc.returncode}")
            try:
                socket.create_connection((host, port), timeout=1).close()
                return proc
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the sync server did not listen within 60 s")


def boot(job):
    sh("mount", "-t", "proc", "proc", "/proc", check=False)
    sh("mount", "-t", "sysfs", "sys", "/sys", check=False)
    sh("ip", "link", "set", "lo", "up")
    os.makedirs(job["work"] + "/home", exist_ok=True)


# -- record ----------------------------------------------------------------------------------------

def record(job, out):
    load_modules(job["moddir"], ["dm-log-writes"])
    work, fs = job["work"], job["fs"]
    lw = dm_create("lw", f"0 {sectors('/dev/ubdb')} log-writes /dev/ubdb /dev/ubda")

    def mark(name):
        sh("dmsetup", "message", "lw", "0", "mark", name)

    mkfs(fs, lw)
    mark("mkfs")
    mnt = work + "/mnt"
    os.makedirs(mnt, exist_ok=True)
    sh("mount", lw, mnt)
    receipt = Receipt(job)
    vault, peer = mnt + "/vault", work + "/peer"
    server = receipt.server(job, work + "/server")
    try:
        token = receipt.must(vault, ["server", "account-add", "alice", "--data", work + "/server"])["token"]
        url = f"http://127.0.0.1:{job['port']}"
        for v in (vault, peer):
            receipt.must(v, ["init"])
            receipt.must(v, ["remote", "set", url, "--account", "alice", "--token", token])
        receipt.must(vault, ["sync"])
        os.sync()
        states = [receipt.state(vault)]
        mark("ready")
        ids, commands = {}, []
        ids["INBOX"] = mnt + "/inbox"
        for i, step in enumerate(job["plan"]):
            for args in step.get("peer", []):
                receipt.must(peer, args)
            inbox = []
            if step.get("inbox"):   # the files watch will find, on the recorded disk before it starts
                os.makedirs(ids["INBOX"], exist_ok=True)
                for path, sha in step["inbox"]:
                    shutil.copyfile(path, os.path.join(ids["INBOX"], os.path.basename(path)))
                    inbox.append({"name": os.path.basename(path), "sha256": sha})
                os.sync()
            argv = [ids.get(a, a) for a in step["argv"]]
            mark(f"start-{i}")
            t0 = time.monotonic()
            code, stdout, err = receipt.run(vault, argv, preload=True)
            seconds = time.monotonic() - t0
            mark(f"done-{i}")
            if code != 0:
                raise RuntimeError(f"workload step {i} (receipt {' '.join(argv)}) exited {code}: {err}")
            result = json.loads(stdout) if stdout.strip() else {}
            for name, item in zip(step.get("names", []), result.get("imported", [])):
                ids[name] = item["id"]
            if step.get("expectPulled") and not result.get("pulled"):
                raise RuntimeError(f"workload step {i} (sync) pulled nothing: {stdout.strip()}")
            states.append(receipt.state(vault))
            commands.append({"argv": argv, "kind": argv[0], "seconds": round(seconds, 3), "inbox": inbox,
                             "partial": bool(step.get("partial"))})
        out.update(states=states, commands=commands)
    finally:
        server.terminate()
        server.wait()
    sh("umount", mnt)
    sh("dmsetup", "remove", "lw")


# -- check -----------------------------------------------------------------------------------------

def rerun_args(command, state):
    """The in-flight command run again on what the power cut left; None when nothing is left to do
    (its receipts are gone, or the attachment it detaches is)."""
    argv, kind = command["argv"], command["kind"]
    live = {r["id"]: r for r in state}
    if kind == "rm":
        targets = [t for t in argv[1:] if t in live]
        return ["rm"] + targets if targets else None
    if kind == "detach":
        r = live.get(argv[1])
        return argv if r and any(a["sha256"] == argv[2] for a in r["attachments"]) else None
    if kind in ("edit", "attach") and argv[1] not in live:
        return None
    return argv


def unread(receipt):
    """A receipt as it is before its text is read: no field filled from the text, no suggestion."""
    r = dict(receipt)
    for field in r.get("filled") or []:
        r[field] = None
    r["filled"] = []
    if "suggestions" in r:
        r["suggestions"] = {}
    return r


def same_or_unread(state, expected):
    """Each receipt as expected, or as expected before its text was read (a cut after the command
    committed its receipts and before their text was extracted leaves that text pending, to be read
    with its fields by the command run again or by `receipt index`): never read in part or otherwise."""
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    if len(state) != len(expected):
        return False
    return all(r == e or (r == unread(r) and key(r) == key(unread(e)))
               for r, e in zip(sorted(state, key=lambda r: r["id"]), sorted(expected, key=lambda r: r["id"])))


def reading_problems(after, expected):
    """After the command in flight ran again, each receipt it shares with the state after that command
    holds that state's reading: a text stored without its reading would never be read again."""
    want = {r["id"]: r for r in expected}
    return [f"after the command ran again, receipt {r['id'][:8]} reads {r.get('filled')} {sorted(r.get('suggestions') or {})}, "
            f"expected {want[r['id']].get('filled')} {sorted(want[r['id']].get('suggestions') or {})}"
            for r in after if r["id"] in want
            and (r.get("filled"), r.get("suggestions")) != (want[r["id"]].get("filled"), want[r["id"]].get("suggestions"))]


def part_of(before, state, after):
    """Every receipt of `before`, and only whole receipts of `after` (read, or with their text not read
    yet): a watch cut between two files."""
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    seen, low = {key(r) for r in state}, {key(r) for r in before}
    high = {key(r) for r in after} | {key(unread(r)) for r in after}
    return len(seen) == len(state) and low <= seen <= high


def first_difference(state, expected):
    """What sets the first receipt of `state` apart from the one of `expected` with its id (for the report)."""
    want = {r["id"]: r for r in expected}
    for r in sorted(state, key=lambda r: r["id"]):
        e = want.get(r["id"])
        if e is None:
            return f"receipt {r['id'][:8]} is not expected"
        if r != e and r != unread(e):
            return f"receipt {r['id'][:8]}: " + ", ".join(f"{k} {r.get(k)!r} not {e.get(k)!r}" for k in sorted(set(r) | set(e)) if r.get(k) != e.get(k))
    return ""


def sha256_of(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def inbox_problems(mnt, point, commands, state):
    """What watch promises of each file it was given, once it has started: still in the inbox, or in
    .imported/ with a receipt holding its bytes; never lost, never damaged."""
    problems = []
    attached = {a["sha256"] for r in state for a in r["attachments"]}
    started = point.get("inflight") if point.get("inflight") is not None else min(point["expect"]) - 1
    for index, command in enumerate(commands[:started + 1]):
        for item in command["inbox"]:
            name, sha = item["name"], item["sha256"]
            inbox = os.path.join(mnt, "inbox")
            if os.path.isfile(os.path.join(inbox, name)) and sha256_of(os.path.join(inbox, name)) == sha:
                continue
            moved = [os.path.join(d, f) for d, _, files in os.walk(os.path.join(inbox, ".imported")) for f in files]
            if not any(sha256_of(m) == sha for m in moved):   # under its name or NAME-2.ext
                problems.append(f"watch (step {index}) lost {name}: not in the inbox, nor whole in .imported/")
            elif sha not in attached:
                problems.append(f"watch (step {index}) moved {name} to .imported/ but no receipt holds it")
    return problems


def check_point(job, receipt, point, states, commands):
    fs, work = job["fs"], job["work"]
    snap = dm_create("snap", f"0 {sectors('/dev/ubdb')} snapshot /dev/ubdb /dev/ubdc N 8")
    mnt = work + "/mnt"
    os.makedirs(mnt, exist_ok=True)
    problems, matched = [], None
    try:
        r = sh("mount", snap, mnt, check=False)
        if r.returncode != 0:
            return {"problems": [f"mount failed: {r.stderr.decode(errors='replace').strip()}"], "matched": None}
        try:
            vault = mnt + "/vault"
            code, out, err = receipt.run(vault, ["fsck"])
            try:
                report = json.loads(out)
                bad = [p for p in report["problems"] if p["kind"] not in ALLOWED_FSCK_KINDS]
                if bad:
                    problems.append("receipt fsck: " + "; ".join(f"{p['kind']} {p.get('sha256') or p.get('path') or ''} {p.get('detail') or ''}".strip() for p in bad[:5]))
            except (ValueError, KeyError):
                problems.append(f"receipt fsck exited {code}: {err}")
            try:
                state = receipt.state(vault)
            except RuntimeError as e:
                problems.append(str(e))
                state = None
            if state is not None:
                for k in point["expect"]:
                    if states[k] == state:
                        matched = k
                inflight = point.get("inflight")
                if matched is None and inflight is not None and commands[inflight]["partial"] \
                        and part_of(states[inflight], state, states[inflight + 1]):
                    matched = inflight + 0.5   # some of the command's receipts, each whole
                if matched is None and inflight is not None and same_or_unread(state, states[inflight + 1]):
                    matched = inflight + 0.75  # the command's receipts, their text not read yet
                if matched is None:
                    problems.append(f"the vault's receipts match none of the states {point['expect']} "
                                    f"({len(state)} receipts; expected {[len(states[k]) for k in point['expect']]}; "
                                    f"{first_difference(state, states[point['expect'][-1]])})")
                problems += inbox_problems(mnt, point, commands, state)
                if point.get("inflight") is not None:
                    args = rerun_args(commands[point["inflight"]], state)
                    if args is not None:
                        code, _, err = receipt.run(vault, args)
                        if code != 0:
                            problems.append(f"the next run of receipt {' '.join(args[:2])} exited {code}: {err}")
                        else:
                            # What a text left pending needs to be read: `receipt index` (the command run
                            # again reads only its own files' text; watch leaves imported files alone).
                            code, _, err = receipt.run(vault, ["index"])
                            if code not in (0, 1):  # 1: a file without text (the photos are random bytes)
                                problems.append(f"receipt index after the command ran again exited {code}: {err}")
                            problems += reading_problems(receipt.state(vault), states[inflight + 1])
        finally:
            sh("umount", mnt, check=False)
        complaint = fs_check(fs, snap)
        if complaint:
            problems.append(complaint)
    finally:
        sh("dmsetup", "remove", "snap", check=False)
    return {"problems": problems, "matched": matched}


def check(job, out):
    load_modules(job["moddir"], ["dm-snapshot"])
    work = job["work"]
    with open(work + "/record.json") as f:
        recorded = json.load(f)
    states, commands = recorded["states"], recorded["commands"]
    receipt = Receipt(job)
    server = receipt.server(job, work + "/server-check")
    points = {p["entry"]: p for p in job["points"]}
    results = []
    try:
        target = os.open("/dev/ubdb", os.O_WRONLY)
        with open("/dev/ubda", "rb", buffering=0) as log:
            size = logwrites.sector_size(log)
            last = max(points) if points else -1
            for entry in logwrites.entries(log):
                if entry.index > last:
                    break
                logwrites.apply(entry, log, target, size)
                point = points.get(entry.index)
                if point is not None:
                    os.fsync(target)   # the snapshot reads the device below its page cache
                    result = check_point(job, receipt, point, states, commands)
                    results.append(dict(point, **result))
                    with open(work + "/progress", "w") as f:
                        f.write(f"{len(results)}/{len(points)}\n")
        os.close(target)
    finally:
        server.terminate()
        server.wait()
    out["results"] = results


def main():
    job_path = os.environ.get("PLJOB", "")
    with open(job_path) as f:
        job = json.load(f)
    out = {"ok": False}
    try:
        boot(job)
        (record if job["mode"] == "record" else check)(job, out)
        out["ok"] = True
    except Exception as e:  # reported to the host, which fails the run with it
        out["error"] = f"{type(e).__name__}: {e}"
        out["trace"] = traceback.format_exc()
    with open(os.path.join(job["work"], job["mode"] + ".json"), "w") as f:
        json.dump(out, f)
    os.sync()
    # Power off (reboot(2) with RB_POWER_OFF: no halt command needed, and init must never return).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.reboot(0x4321FEDC)


if __name__ == "__main__":
    main()
