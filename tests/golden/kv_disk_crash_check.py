"""The disk KV tier survives kill -9 with no wrong hit (tests/golden/models/llama_gqa, greedy):

  1. a cold run without prefix caching gives the reference tokens;
  2. `weft generate --kv-disk-cache DIR` is killed with SIGKILL three times while it writes block
     files (block size 1: every token is a block, so writes never stop);
  3. a fresh process on DIR must give the reference tokens, restoring part of the prompt from disk;
  4. then one of the prompt's files gets a flipped payload byte, another is cut short, a torn
     temporary file and a file of garbage are added: the next fresh process still gives the
     reference tokens, counts the corrupt and truncated misses, and recomputes from there;
  5. while `weft serve` holds DIR, a second process runs without the disk tier (one warning) and
     still gives the reference tokens.

  python3 kv_disk_crash_check.py WEFT_BINARY
"""
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "models", "llama_gqa")
PROMPT = [(i * 37 + 11) % 500 + 3 for i in range(40)]
ROOT_HASH = 0x6A09E667F3BCC908
FIXED_HEADER = 100  # kv_block_file.h: bytes before the tokens


def base(weft, *extra):
    return [weft, "generate", "--model", MODEL, "--prompt-ids", ",".join(map(str, PROMPT)), "--temperature", "0",
            "--ignore-eos", "--threads", "1", "--block-size", "1", "--kv-cache-dtype", "float32"] + list(extra)


def generate(weft, *extra, max_tokens=16):
    out = subprocess.run(base(weft, "--max-tokens", str(max_tokens), "--json", *extra), capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        sys.exit("weft generate failed (%d): %s" % (out.returncode, out.stderr))
    import json
    return json.loads(out.stdout)["output_ids"], out.stderr


def summary(stderr):
    """The disk numbers of the kv-tier summary line weft generate prints on stderr."""
    m = re.search(r"found at start\), (\d+)/(\d+) lookups hit, misses: (\d+) absent, (\d+) corrupt, (\d+) truncated",
                  stderr)
    if not m:
        sys.exit("no kv tier summary in: " + stderr)
    found = int(re.search(r"bytes, (\d+) found at start", stderr).group(1))
    hits, lookups, absent, corrupt, truncated = map(int, m.groups())
    return dict(found=found, hits=hits, lookups=lookups, absent=absent, corrupt=corrupt, truncated=truncated)


def chain(directory):
    """The prompt's block files in prefix order: [path, ...] following parent hashes from the root."""
    by_parent = {}
    for name in os.listdir(directory):
        if not name.endswith(".kvb"):
            continue
        with open(os.path.join(directory, name), "rb") as f:
            head = f.read(FIXED_HEADER + 4 * 2)
        if len(head) < FIXED_HEADER or head[:8] != b"WEFTKVB1":
            continue
        num_tokens = struct.unpack_from("<I", head, 12)[0]
        block_hash, parent = struct.unpack_from("<QQ", head, 72)
        token = struct.unpack_from("<i", head, FIXED_HEADER)[0] if num_tokens == 1 else None
        by_parent.setdefault(parent, []).append((token, block_hash, name))
    files, parent = [], ROOT_HASH
    for token in PROMPT[:-1]:
        nxt = [e for e in by_parent.get(parent, []) if e[0] == token]
        if not nxt:
            break
        files.append(os.path.join(directory, nxt[0][2]))
        parent = nxt[0][1]
    return files


def locked(path):
    """Whether some process holds a flock on `path`, read from /proc/locks (taking the lock to test
    it could make the server itself find it taken)."""
    if not os.path.exists(path):
        return False
    inode = os.stat(path).st_ino
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if "FLOCK" in fields and any(x.count(":") == 2 and x.rsplit(":", 1)[1] == str(inode) for x in fields):
                return True
    return False


def crash(weft, directory, min_files):
    """Starts a long generation on `directory` and SIGKILLs it once it has written `min_files` block files."""
    # The model's context is 512 tokens; one token per step keeps the prefill writing too.
    proc = subprocess.Popen(base(weft, "--max-tokens", "470", "--max-num-batched-tokens", "1", "--kv-disk-cache",
                                 directory),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if os.path.isdir(directory) and sum(n.endswith(".kvb") for n in os.listdir(directory)) >= min_files:
            break
        time.sleep(0.01)
    if proc.poll() is not None:
        sys.exit("the generation ended before it could be killed")
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def main():
    weft = sys.argv[1]
    reference, _ = generate(weft, "--no-prefix-caching")
    tmp = tempfile.mkdtemp(prefix="weft_kv_crash_")
    directory = os.path.join(tmp, "kv")
    try:
        for min_files in (5, 60, 150):
            crash(weft, directory, min_files)
        ids, err = generate(weft, "--kv-disk-cache", directory)
        s = summary(err)
        if ids != reference:
            sys.exit("after kill -9: got %r, the cold run gave %r" % (ids, reference))
        if s["found"] < 150 or s["hits"] < 10:
            sys.exit("after kill -9 the fresh process used too little of the disk tier: %r" % s)
        print("after 3 x kill -9: same tokens, %d files found, %d/%d prompt blocks from disk" %
              (s["found"], s["hits"], s["lookups"]))

        files = chain(directory)
        if len(files) < 12:
            sys.exit("only %d of the prompt's blocks are on disk" % len(files))
        with open(files[4], "r+b") as f:
            f.truncate(os.path.getsize(files[4]) // 2)
        with open(os.path.join(directory, ".tmp-00000000deadbeef.kvb"), "wb") as f:
            f.write(b"WEFTKVB1 torn")
        with open(os.path.join(directory, "00000000feedface.kvb"), "wb") as f:
            f.write(os.urandom(700))
        ids, err = generate(weft, "--kv-disk-cache", directory)
        s = summary(err)
        if ids != reference:
            sys.exit("with damaged files: got %r, the cold run gave %r" % (ids, reference))
        if s["truncated"] < 1 or s["hits"] != 4:
            sys.exit("with a truncated 5th block: expected 4 hits and a truncated miss, got %r" % s)
        # The 9th block is damaged only now: the run above recomputed from the 5th block on and
        # may have rewritten (or, with the disk prefetch, already read) the later ones.
        files = chain(directory)
        with open(files[8], "r+b") as f:  # a payload byte: only the checksum can tell
            f.seek(-3, os.SEEK_END)
            byte = f.read(1)
            f.seek(-3, os.SEEK_END)
            f.write(bytes([byte[0] ^ 0x40]))
        ids, err = generate(weft, "--kv-disk-cache", directory)
        s = summary(err)
        if ids != reference or s["corrupt"] < 1 or s["hits"] != 8:
            sys.exit("with a corrupt 9th block: expected the reference, 8 hits and a corrupt miss, got %r %r" % (ids, s))
        print("damaged files: misses counted (truncated, then corrupt), same tokens")

        # The default model (it has a tokenizer) serving on DIR holds its lock.
        holder = subprocess.Popen([weft, "serve", "--model", os.path.join(HERE, "..", "..", "configs", "default-model"),
                                   "--port", "0", "--threads", "1", "--kv-disk-cache", directory],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while time.time() < deadline and holder.poll() is None and not locked(os.path.join(directory, "lock")):
                time.sleep(0.05)
            if not locked(os.path.join(directory, "lock")):
                sys.exit("weft serve --kv-disk-cache did not take the directory's lock")
            ids, err = generate(weft, "--kv-disk-cache", directory)
            if "another process is using it" not in err or ids != reference:
                sys.exit("a second process on a locked directory: %r / %s" % (ids, err))
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait()
        print("locked directory: the second process ran without the disk tier, same tokens")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
