#!/usr/bin/env python3
"""Seconds from start until a command's stdout has delivered its first audio
bytes past a 44-byte WAV header, and until it ends.

    scripts/first-audio.py [--header 44] -- COMMAND ARG...

Prints `first_audio_s total_s audio_bytes` on one line. Exits non-zero, with
the command's stderr, when the command fails or writes no audio.
"""
import subprocess
import sys
import time


def main() -> int:
    args = sys.argv[1:]
    header = 44
    if args[:1] == ["--header"]:
        header, args = int(args[1]), args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    t0 = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got, first = 0, None
    while True:
        chunk = proc.stdout.read1(65536)
        if not chunk:
            break
        got += len(chunk)
        if first is None and got > header:
            first = time.monotonic() - t0
    err = proc.stderr.read()
    code = proc.wait()
    total = time.monotonic() - t0
    if code != 0 or first is None:
        sys.stderr.write(err.decode(errors="replace"))
        print(f"first-audio: the command exited {code} after {got} bytes", file=sys.stderr)
        return 1
    print(f"{first:.3f} {total:.3f} {got - header}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
