#!/usr/bin/env python3
"""Chapter headings of `tingshu split` on whole books turned into dumps.

  eval_dumps.py BOOK.txt [BOOK.txt …] [--traditional] [--errors]

Each BOOK has its chapter headings on lines of their own (第N回 上联 下联,
第N章 标题, in any encoding tingshu reads). The script makes the dump a
book site would serve: the whole book on one line, every whitespace removed,
and the colon after a heading's number too (第一回：宴桃園… → 第一回宴桃園…);
then it splits the dump with tingshu and counts the headings found (by their
第N回 / 第N章), the titles found exactly and the headings that are not the
book's. --traditional converts the dump to Traditional with OpenCC's phrase
tables (`examples/s2t.rs`, built here if missing; the conversion the dump
tests use, which writes the 回心 of 第十四回心猿… as 迴心). Set TINGSHU_BIN to measure
another build.

Only the standard library; the tingshu binary decodes the book.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HEADING = re.compile(r"^\s*第[0-9０-９一二三四五六七八九十百千零〇○两]+[回迴章]")
KEY = re.compile(r"^第([^回迴章]+)[回迴章]")


def read(path):
    raw = open(path, "rb").read()
    for encoding in ("utf-8-sig", "gb18030", "big5"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            pass
    sys.exit(f"eval_dumps: {path}: neither UTF-8, GB18030 nor Big5")


def to_traditional(text):
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    s2t = os.path.join(here, "target/release/examples/s2t")
    if not os.path.exists(s2t):
        subprocess.run(
            ["cargo", "build", "--release", "--quiet", "--example", "s2t"], cwd=here, check=True
        )
    return subprocess.run([s2t], input=text, capture_output=True, text=True, check=True).stdout


def dump(text):
    """The one-line dump of `text` and the headings it must give."""
    headings, out = [], []
    for line in text.splitlines():
        if HEADING.match(line):
            line = re.sub(r"[\s:：]+", "", line)
            headings.append(line)
        out.append(re.sub(r"\s+", "", line))
    return "".join(out), headings


def split_titles(binary, text):
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "book.txt")
        open(path, "w", encoding="utf-8").write(text)
        run = subprocess.run(
            [binary, "split", path, "--format", "jsonl"], capture_output=True, text=True, check=True
        )
    titles = []
    for line in run.stdout.splitlines():
        r = json.loads(line)
        if not titles or titles[-1][0] != r["chapter"]:
            titles.append((r["chapter"], r["title"]))
    return [t for _, t in titles]


def key(title):
    m = KEY.match(title or "")
    return m.group(1) if m else None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        sys.exit(__doc__)
    binary = os.environ.get("TINGSHU_BIN", "target/release/tingshu")
    for book in args:
        text = read(book)
        line, want = dump(text)
        if "--traditional" in sys.argv:
            # After the dump, as the dump tests do: 第十四回心猿 → 第十四迴心猿.
            line, heads = to_traditional(line + "\n" + "\n".join(want)).split("\n", 1)
            want = heads.split("\n")
        got = split_titles(binary, line)
        by_key = {key(t): t for t in got if key(t)}
        wanted = {key(t): t for t in want}
        found = sum(k in by_key for k in wanted)
        exact = sum(by_key.get(k) == t for k, t in wanted.items())
        extra = [t for t in got if key(t) and key(t) not in wanted]
        print(
            f"{os.path.basename(book)}: {len(got)} chapters; headings found {found}/{len(want)}, "
            f"titles exact {exact}, headings not the book's {len(extra)}"
        )
        if "--errors" in sys.argv:
            for k, t in wanted.items():
                if by_key.get(k) != t:
                    print(f"  want {t}  got {by_key.get(k)}")
            for t in extra:
                print(f"  not a heading: {t}")


if __name__ == "__main__":
    main()
