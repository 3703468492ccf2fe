#!/usr/bin/env python3
"""How fast can a host write a large map file, by which path? (issue 33: the capsid's 949 MB MRC
took 0.78-0.92 s of its 2.6-3.0 s on an H200 host's ext4.) Writes SIZE MB of random bytes to
DIR/io-test.bin several ways, interleaved, REPEATS times, and prints each one's wall time:

  buffered-1      one pwrite of the whole buffer (what espgrid does), then fsync timed apart
  buffered-N      N threads, a pwrite each of a contiguous share (ext4 serialises buffered writes)
  direct-1        O_DIRECT, one thread, 64 MiB pieces (no page-cache copy; the disk's speed)
  direct-N        O_DIRECT after fallocate, N threads
  direct-N-nofa   O_DIRECT, N threads, no fallocate (extending writes)

usage: io_write_paths.py DIR [SIZE_MB=949] [REPEATS=3] [THREADS=8]
"""
import mmap
import os
import sys
import threading
import time


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    where = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 949
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    nbytes = size << 20
    buf = mmap.mmap(-1, nbytes)  # page-aligned, as O_DIRECT needs
    buf.write(os.urandom(1 << 20) * size)
    view = memoryview(buf)
    path = os.path.join(where, "io-test.bin")
    piece = 64 << 20

    def shares(n):
        step = (nbytes // n + (1 << 20) - 1) // (1 << 20) * (1 << 20)  # MiB-aligned shares
        return [(a, min(nbytes, a + step)) for a in range(0, nbytes, step)]

    def write_range(fd, a, b, chunk):
        while a < b:
            e = min(b, a + chunk)
            done = os.pwrite(fd, view[a:e], a)
            a += done

    def run(mode, n, fallocate):
        if os.path.exists(path):
            os.unlink(path)
        os.sync()
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if mode == "direct" else 0)
        fd = os.open(path, flags, 0o644)
        try:
            t = time.perf_counter()
            if fallocate:
                os.posix_fallocate(fd, 0, nbytes)
            chunk = piece if mode == "direct" else nbytes
            if n == 1:
                write_range(fd, 0, nbytes, chunk)
            else:
                ts = [threading.Thread(target=write_range, args=(fd, a, b, chunk)) for a, b in shares(n)]
                for th in ts:
                    th.start()
                for th in ts:
                    th.join()
            written = time.perf_counter() - t
            flushed = timed(lambda: os.fsync(fd))
        finally:
            os.close(fd)
        return written, flushed

    variants = [("buffered-1", "buffered", 1, False), (f"buffered-{threads}", "buffered", threads, False),
                ("direct-1", "direct", 1, False), (f"direct-{threads}", "direct", threads, True),
                (f"direct-{threads}-nofa", "direct", threads, False)]
    print(f"{size} MB to {path}, {repeats} rounds, interleaved")
    for r in range(repeats):
        for name, mode, n, fa in variants:
            try:
                w, f = run(mode, n, fa)
                print(f"round {r + 1} {name:16s} write {w:.3f} s  fsync {f:.3f} s  total {w + f:.3f} s", flush=True)
            except OSError as e:
                print(f"round {r + 1} {name:16s} failed: {e}", flush=True)
    os.unlink(path)


if __name__ == "__main__":
    main()
