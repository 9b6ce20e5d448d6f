#!/usr/bin/env python3
"""Fits the weights of the latent-quote scorer (src/text/speaker/scorer.rs).

  train_speaker_scorer.py collect BIN DATA NAMES PARTS OUT.jsonl [--cast]
      cuts the WP2021 instances of DATA into PARTS books (as
      eval-parts.sh does), splits each without a cast (with the name
      list's cast with --cast) with the scorer's
      trace on, and writes one record per target quote that reached the
      scorer: its part, gold speaker, the cascade's pick and the
      candidates with their features (names mapped to canonical ones).
  train_speaker_scorer.py collect-annotated BIN OUT.jsonl SOURCE TRUTH [SOURCE TRUTH…]
      the same for books whose quotes carry their speakers
      (eval_annotated.py's format), each split without a cast and a part
      of its own: one record per paragraph that reached the scorer whose
      first quote has a named speaker (for WEIGHTS_INLINE, fitted on the
      web-novel fixtures)
  train_speaker_scorer.py fit RECORDS.jsonl [--cv] [--l2 X] [--rust]
      fits a conditional logit (softmax over each quote's candidates) by
      gradient descent, L2-regularised. --cv: leave one part out, report
      held-out accuracy per part against the cascade's (records of one
      part only: four folds of consecutive records, a book's chapters). --rust: print the
      weights as the WEIGHTS constant of scorer.rs.

Only the standard library: the data is a few thousand small vectors.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval_speakers  # noqa: E402

TARGET = eval_speakers.TARGET


def feature_names():
    src = open(
        os.path.join(os.path.dirname(__file__), "..", "src/text/speaker/scorer.rs"),
        encoding="utf-8",
    ).read()
    block = src.split("pub(super) const FEATURE_NAMES", 1)[1].split("];", 1)[0]
    return re.findall(r'"([a-z_]+)"', block)


def collect(binary, data, names, parts, out, with_cast=False):
    env = dict(os.environ, RUST_LOG="tingshu::speaker::features=trace", NO_COLOR="1")
    with open(out, "w", encoding="utf-8") as sink:
        for part, text in enumerate(eval_speakers.cut(data, parts)):
            with tempfile.TemporaryDirectory() as work:
                with open(f"{work}/part.txt", "w", encoding="utf-8") as f:
                    f.write(text)
                eval_speakers.make(f"{work}/part.txt", names, work)
                aliases = eval_speakers.alias_map(work)
                gold = []
                for line in open(f"{work}/gold.tsv", encoding="utf-8"):
                    n, speaker, category, text = line.rstrip("\n").split("\t")
                    gold.append((int(n), speaker, category, text))
                cast = ["--cast", f"{work}/cast.toml"] if with_cast else []
                run = subprocess.run(
                    [binary, "split", f"{work}/book.txt", "--format", "jsonl", *cast],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                records = []
                for line in run.stderr.splitlines():
                    at = line.find("FEATURES ")
                    if at >= 0:
                        r = json.loads(line[at + len("FEATURES ") :])
                        if r["i"] == TARGET - 1:
                            records.append(r)
                k = 0
                for n, speaker, category, text in gold:
                    if k < len(records) and records[k]["text"] == text:
                        r = records[k]
                        k += 1
                        mapped = lambda x: aliases.get(x, x) if x else None  # noqa: E731
                        cands = [
                            {"name": mapped(c["name"]), "f": c["f"]} for c in r["candidates"]
                        ]
                        rec = {
                            "part": part,
                            "cast": with_cast,
                            "n": n,
                            "category": category,
                            "gold": speaker,
                            "cascade": mapped(r["cascade"]),
                            "candidates": cands,
                        }
                        sink.write(json.dumps(rec, ensure_ascii=False) + "\n")
                print(f"part {part}: {k} target quotes reached the scorer", file=sys.stderr)


def collect_annotated(binary, out, books):
    with open(out, "w", encoding="utf-8"):
        pass
    for part, (source, truth) in enumerate(books):
        collect_book(binary, source, truth, part, out)


def collect_book(binary, source, truth, part, out):
    import eval_annotated  # noqa: E402
    import eval_genders  # noqa: E402

    known = eval_genders.truth(truth)
    env = dict(os.environ, RUST_LOG="tingshu::speaker::features=trace", NO_COLOR="1")
    with tempfile.TemporaryDirectory() as work, open(out, "a", encoding="utf-8") as sink:
        eval_annotated.strip(source, work)
        run = subprocess.run(
            [binary, "split", f"{work}/book.txt", "--format", "jsonl"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        gold = [json.loads(line) for line in open(f"{work}/gold.jsonl", encoding="utf-8")]
        canonical = lambda x: known.get(x, (x,))[0] if x else None  # noqa: E731
        n = 0
        for line in run.stderr.splitlines():
            at = line.find("FEATURES ")
            if at < 0:
                continue
            r = json.loads(line[at + len("FEATURES ") :])
            first = r["text"].find("“")
            g = next((g for g in gold if r["text"].find(g["text"]) == first >= 0), None)
            if g is None or g["speaker"].startswith(("-", ".")):
                continue
            rec = {
                "part": part,
                "cast": False,
                "n": n,
                "category": "latent",
                "gold": canonical(g["speaker"]),
                "cascade": canonical(r["cascade"]),
                "candidates": [{"name": canonical(c["name"]), "f": c["f"]} for c in r["candidates"]],
            }
            sink.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    print(f"{source}: {n} quotes reached the scorer", file=sys.stderr)


def load(path, names):
    index = {n: k for k, n in enumerate(names)}
    out = []
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        r["x"] = [[index[f] for f in c["f"]] for c in r["candidates"]]
        r["y"] = [c["name"] == r["gold"] for c in r["candidates"]]
        out.append(r)
    return out


def pick(r, w):
    best, at = None, None
    for k, x in enumerate(r["x"]):
        s = sum(w[f] for f in x)
        if best is None or s > best:
            best, at = s, k
    return None if at is None else r["candidates"][at]["name"]


def fit(records, n, l2=0.01, steps=400, rate=0.5):
    w = [0.0] * n
    train = [r for r in records if any(r["y"]) and len(r["x"]) > 1]
    for _ in range(steps):
        grad = [0.0] * n
        for r in train:
            scores = [sum(w[f] for f in x) for x in r["x"]]
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            z = sum(e)
            gold_mass = sum(ek for ek, y in zip(e, r["y"]) if y) / z
            for x, ek, y in zip(r["x"], e, r["y"]):
                # d log P(gold) / d w: gold candidates' share minus the model's.
                g = (ek / z) * ((1 / gold_mass if y else 0) - 1)
                for f in x:
                    grad[f] += g
        for k in range(n):
            w[k] += rate * (grad[k] / max(len(train), 1) - l2 * w[k])
    return w


def accuracy(records, w):
    right = sum(pick(r, w) == r["gold"] for r in records)
    cascade = sum(r["cascade"] == r["gold"] for r in records)
    oracle = sum(any(r["y"]) for r in records)
    return right, cascade, oracle


def main():
    a = sys.argv[1:]
    if len(a) >= 5 and len(a) % 2 == 1 and a[0] == "collect-annotated":
        collect_annotated(a[1], a[2], list(zip(a[3::2], a[4::2])))
        return
    if len(a) in (6, 7) and a[0] == "collect":
        collect(a[1], a[2], a[3], int(a[4]), a[5], with_cast="--cast" in a)
        return
    if len(a) >= 2 and a[0] == "fit":
        names = feature_names()
        records = load(a[1], names)
        l2 = float(a[a.index("--l2") + 1]) if "--l2" in a else 0.003
        if "--cv" in a:
            parts = sorted({r["part"] for r in records})
            if len(parts) == 1:
                k = len(records)
                for f, r in enumerate(records):
                    r["part"] = f * 4 // max(k, 1)
                parts = sorted({r["part"] for r in records})
            tot = [0, 0, 0, 0]
            for p in parts:
                held = [r for r in records if r["part"] == p]
                w = fit([r for r in records if r["part"] != p], len(names), l2)
                right, cascade, oracle = accuracy(held, w)
                tot = [t + v for t, v in zip(tot, (right, cascade, oracle, len(held)))]
                print(f"part {p}: scorer {right}/{len(held)}, cascade {cascade}, gold among candidates {oracle}")
            print(f"all held out: scorer {tot[0]}/{tot[3]}, cascade {tot[1]}, gold among candidates {tot[2]}")
        w = fit(records, len(names), l2)
        right, cascade, oracle = accuracy(records, w)
        print(f"fitted on all: scorer {right}/{len(records)}, cascade {cascade}, oracle {oracle}")
        for name, v in zip(names, w):
            print(f"  {name:<24} {v:+.3f}")
        if "--rust" in a:
            print("pub(super) const WEIGHTS: [f32; FEATURES] = [")
            print("    " + ", ".join(f"{v:.3f}" for v in w) + ",")
            print("];")
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
