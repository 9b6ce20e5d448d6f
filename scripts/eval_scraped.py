#!/usr/bin/env python3
"""Chapter headings of `tingshu split` on books scraped as one line.

  eval_scraped.py [--unit 回|章|卷] [--miss] BOOK.txt [BOOK.txt …]

Each BOOK is a whole book with its line breaks gone, as web sites and some
archives serve it (Project Gutenberg's Chinese texts kept in the GitHub
repository TzuYuJih/BDSE37_-_Project_Gutenberg are such). The truth is found
without tingshu: the longest chain of 第N<unit> marks in text order whose
numbers go 1, 2, 3 … (up to three missing at a step; a number whose zeros
were lost, 第一回 for 第一〇回, counts), starting at one of the first five
marks. A heading is found when tingshu starts a chapter at that very mark; a
chapter whose 第N title starts anywhere else is a false one. The chain is
not perfect truth (a mention of the next chapter just before it wins), so
read --miss before believing a miss. TINGSHU_BIN names another build
(default: this checkout's target/release/tingshu).

Only the standard library.
"""
import json
import os
import re
import subprocess
import sys

DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "兩": 2, "三": 3, "四": 4, "五": 5,
          "六": 6, "七": 7, "八": 8, "九": 9}
NUMBER = "[一二三四五六七八九十百零〇兩]+"


def number(s):
    if not any(c in "十百千" for c in s):
        return int("".join(str(DIGITS.get(c, 0)) for c in s))
    total, digit = 0, 0
    for c in s:
        if c in DIGITS:
            digit = DIGITS[c]
        else:
            total += (digit or 1) * {"十": 10, "百": 100, "千": 1000}[c]
            digit = 0
    return total + digit


def same(want, got):
    """Is `got` the number `want`, perhaps with its zeros lost?"""
    return got == want or str(want).replace("0", "") == str(got).replace("0", "")


def chain(marks, first):
    out, n, i = [marks[first]], marks[first][1] + 1, first + 1
    while True:
        hit = next(((j, want) for want in range(n, n + 4)
                    for j in range(i, len(marks)) if same(want, marks[j][1])), None)
        if hit is None:
            return out
        j, want = hit
        out.append((marks[j][0], want))
        i, n = j + 1, want + 1


def truth(text, unit):
    units = "[回迴]" if unit == "回" else unit
    marks = [(m.start(), number(m.group(1)))
             for m in re.finditer(f"第({NUMBER}){units}", text)]
    return max((chain(marks, k) for k in range(min(5, len(marks)))), key=len, default=[])


def chapters(binary, path):
    run = subprocess.run([binary, "split", path, "--format", "jsonl"],
                         capture_output=True, text=True, encoding="utf-8", check=True)
    titles = []
    for line in run.stdout.splitlines():
        r = json.loads(line)
        if r["chapter"] > 0 and (not titles or titles[-1][0] != r["chapter"]):
            titles.append((r["chapter"], r["title"] or ""))
    return [t for _, t in titles]


def main():
    args = sys.argv[1:]
    unit, miss = "回", False
    books = []
    while args:
        a = args.pop(0)
        if a == "--unit" and args:
            unit = args.pop(0)
        elif a == "--miss":
            miss = True
        elif a.startswith("--"):
            sys.exit(__doc__)
        else:
            books.append(a)
    if not books:
        sys.exit(__doc__)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    binary = os.environ.get("TINGSHU_BIN", os.path.join(here, "target/release/tingshu"))
    total = [0, 0, 0]
    for book in books:
        text = open(book, encoding="utf-8").read()
        want = truth(text, unit)
        titles = chapters(binary, book)
        at, starts = 0, []
        for t in titles:
            k = text.find(t, at) if t else -1
            starts.append(None if k < 0 else k)
            at = at if k < 0 else k + len(t)
        truth_at = {a for a, _ in want}
        found = len(truth_at & {a for a in starts if a is not None})
        false = sum(1 for a, t in zip(starts, titles)
                    if t.startswith("第") and (a is None or a not in truth_at))
        print(f"{os.path.basename(book)}: {len(titles)} chapters; headings found "
              f"{found}/{len(want)}, false {false}")
        if miss:
            got = set(starts)
            for a, n in want:
                if a not in got:
                    print(f"  missed {n}: …{text[max(0, a - 25):a + 30]}…")
            for a, t in zip(starts, titles):
                if t.startswith("第") and (a is None or a not in truth_at):
                    print(f"  false: {t}")
        total = [total[0] + found, total[1] + len(want), total[2] + false]
    if len(books) > 1:
        print(f"all: headings found {total[0]}/{total[1]}, false {total[2]}")


if __name__ == "__main__":
    main()
