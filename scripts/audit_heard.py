#!/usr/bin/env python3
"""Where the wrong syllables come from: the meter's per-segment JSON
(../shared/tools/asr/asr_cer.py --json) against the requests tingshu sent
(examples/dump_requests --jsonl).

For every segment the syllables tingshu sent (its pinyin, chunk by chunk)
are aligned with the syllables heard (the recognised text through
pypinyin, as the meter scores it), toneless, by minimum edit distance.
Every mismatch the meter counts is put in one class:

  reading      tingshu's reading of the character differs from the
               dictionary's (pypinyin in context, tone sandhi applied): the
               front end chose it, so the front end is the suspect;
  edge         the first or last syllable of a chunk, lost or changed: the
               trim, the fades or the joins between chunks;
  dropped      a syllable inside a chunk not heard at all;
  mapping      a syllable whose phonemes are the usual suspects (ü, erhua,
               the buzzed vowels of zi/ci/si/zhi/chi/shi/ri, a neutral tone),
               heard otherwise;
  near         heard with the same initial or the same final: the model's
               articulation or the meter's ear, not told apart here;
  far          heard as something else altogether;
  inserted     a syllable heard that was not sent;
  same-char    the character heard is the one sent, but the meter's
               pypinyin reads it otherwise in the recognised sentence: an
               error of the meter, not of the audio (or a reading where
               tingshu and the dictionary differ and the ear agreed with
               either).

Beside them, not counted by the meter: `homophone` (the right syllable
written with another character) and `tone` (the right syllable with
another tone; split into tingshu's reading and the rest).

Pace: syllables per second of each segment against the length of its
longest chunk, with the SER of each length band.

Position: how often a chunk's first, middle and last syllables are wrong
(any class but inserted), and the last ones by the mark that ends the
chunk (。，：！？…; a narrator's 说： before a quote is the suspect).

Usage: audit_heard.py REQUESTS.jsonl ASR.json [--worst N] [--json OUT]
Run with the meter's venv python (pypinyin, opencc, rapidfuzz).
"""

import argparse
import collections
import json
import re
import sys

from opencc import OpenCC
from pypinyin import Style, lazy_pinyin
from rapidfuzz.distance import Levenshtein

T2S = OpenCC("t2s")
FOLD = str.maketrans({"著": "着", "拚": "拼"})
HAN = re.compile("[\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
SYL = re.compile(r"[a-zü:v]+[1-5]")
INITIALS = sorted(
    "b p m f d t n l g k h j q x zh ch sh r z c s y w".split(), key=len, reverse=True
)
CLASSES = ["reading", "edge", "dropped", "mapping", "near", "far", "inserted", "same-char"]


def han(text):
    return "".join(HAN.findall(T2S.convert(text).translate(FOLD)))


def toneless(s):
    return s.rstrip("12345").replace("ü", "v").replace("u:", "v")


def split(syl):
    s = toneless(syl)
    for i in INITIALS:
        if s.startswith(i) and len(s) > len(i):
            return i, s[len(i):]
    return "", s


def mapping_suspect(syl):
    s = toneless(syl)
    return (
        "v" in s
        or (s.endswith("r") and s != "er")
        or s in {"zi", "ci", "si", "zhi", "chi", "shi", "ri"}
        or syl.endswith("5")
    )


def heard_syllables(text):
    return lazy_pinyin(text, style=Style.TONE3, neutral_tone_with_five=True, errors="ignore")


def end_mark(text):
    """The mark that ends a chunk's text (closing quotes skipped), or "none"."""
    t = text.rstrip().rstrip("”」』’\"'")
    return t[-1] if t and not HAN.match(t[-1]) else "none"


def sent_segment(chunks):
    """(chars, syllables, chunk edge flags, positions) of a segment's chunks,
    or None when a chunk's characters and syllables do not pair one to one.
    A position is "first", "middle" or "last <mark>"."""
    chars, syls, edge, where = [], [], [], []
    for c in chunks:
        h = han(c["text"])
        s = SYL.findall(c["pinyin"].lower())
        if len(h) != len(s):
            return None
        chars.extend(h)
        syls.extend(s)
        edge.extend(i == 0 or i == len(s) - 1 for i in range(len(s)))
        mark = end_mark(c["text"])
        where.extend(
            f"last {mark}" if i == len(s) - 1 else "first" if i == 0 else "middle"
            for i in range(len(s))
        )
    return chars, syls, edge, where


def audit(requests, meter):
    by_segment = collections.defaultdict(list)
    for r in requests:
        by_segment[f"{r['chapter']:04d}#{r['segment']:03d}"].append(r)
    counts = collections.Counter()
    tones = collections.Counter()
    homophones = 0
    unaligned = []
    segments = []
    bands = collections.defaultdict(lambda: [0, 0, 0, 0.0])  # syl, err, n, seconds
    positions = collections.defaultdict(lambda: [0, 0])  # syllables, wrong
    examples = collections.defaultdict(list)
    for item in meter["items"]:
        chunks = sorted(by_segment.get(item["id"], []), key=lambda c: c["chunk"])
        sent = sent_segment(chunks) if chunks else None
        if sent is None:
            unaligned.append(item["id"])
            continue
        chars, syls, edge, where = sent
        for w in where:
            positions[w][0] += 1
        # The dictionary's reading in context, with 一/不 sandhi as tingshu sends it.
        gold = lazy_pinyin(
            "".join(chars), style=Style.TONE3, neutral_tone_with_five=True,
            errors="ignore", tone_sandhi=True,
        )
        hyp_chars = item["hyp_norm"]
        hyp = heard_syllables(hyp_chars)
        a = [toneless(s) for s in syls]
        b = [toneless(s) for s in hyp]
        ops = Levenshtein.opcodes(a, b)
        classes = collections.Counter()

        def note(cls, detail):
            classes[cls] += 1
            if len(examples[cls]) < 12:
                examples[cls].append(f"{item['id']} {detail}")

        for op in ops:
            if op.tag == "equal":
                for k in range(op.src_end - op.src_start):
                    i, j = op.src_start + k, op.dest_start + k
                    if hyp_chars[j:j + 1] != chars[i]:
                        homophones += 1
                    if syls[i][-1] != hyp[j][-1:]:
                        tones["ours" if syls[i] != gold[i] else "model/meter"] += 1
                continue
            src = list(range(op.src_start, op.src_end))
            dst = list(range(op.dest_start, op.dest_end))
            if op.tag == "insert":
                for j in dst:
                    note("inserted", f"+{hyp[j]}({hyp_chars[j:j + 1]})")
                continue
            for k, i in enumerate(src):
                positions[where[i]][1] += 1
                j = dst[k] if k < len(dst) else None
                heard = f"{hyp[j]}({hyp_chars[j:j + 1]})" if j is not None else "-"
                detail = f"{chars[i]} sent {syls[i]} dict {gold[i]} heard {heard}"
                if j is not None and hyp_chars[j:j + 1] == chars[i]:
                    note("same-char", detail)
                elif toneless(syls[i]) != toneless(gold[i]):
                    note("reading", detail)
                elif edge[i]:
                    note("edge", detail)
                elif j is None:
                    note("dropped", detail)
                elif mapping_suspect(syls[i]):
                    note("mapping", detail)
                elif split(syls[i])[0] == split(hyp[j])[0] or split(syls[i])[1] == split(hyp[j])[1]:
                    note("near", detail)
                else:
                    note("far", detail)
            for j in dst[len(src):]:
                note("inserted", f"+{hyp[j]}({hyp_chars[j:j + 1]})")
        counts.update(classes)
        longest = max(len(han(c["text"])) for c in chunks)
        band = "1-20" if longest <= 20 else "21-40" if longest <= 40 else "41-60" if longest <= 60 else ">60"
        bands[band][0] += item["n_syl"]
        bands[band][1] += item["syl_err"]
        bands[band][2] += 1
        bands[band][3] += item["audio_s"]
        segments.append({
            "id": item["id"], "voice": item["voice"], "syl_err": item["syl_err"],
            "n_syl": item["n_syl"], "classes": dict(classes),
            "sent": " ".join(syls), "ref": "".join(chars), "hyp": hyp_chars,
        })
    return counts, tones, homophones, unaligned, segments, bands, examples, positions


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("requests")
    ap.add_argument("asr_json")
    ap.add_argument("--worst", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    requests = [json.loads(line) for line in open(args.requests, encoding="utf-8") if line.strip()]
    meter = json.load(open(args.asr_json, encoding="utf-8"))
    counts, tones, homophones, unaligned, segments, bands, examples, positions = audit(
        requests, meter
    )
    total = sum(counts.values())
    o = meter["overall"]
    print(f"# {meter['meta'].get('source')}: SER {o['ser']:.2f} % ({o['syl_err']}/{o['n_syl']}), "
          f"{len(segments)} segments audited, {len(unaligned)} not aligned {unaligned[:5]}")
    print(f"\n| class | errors | share |\n|---|---:|---:|")
    for c in CLASSES:
        print(f"| {c} | {counts[c]} | {counts[c] / total * 100 if total else 0:.0f} % |")
    print(f"| total (alignment's count) | {total} | |")
    print(f"\nnot counted by the meter: homophones {homophones}; tone only: "
          f"tingshu's reading {tones['ours']}, model or meter {tones['model/meter']}")
    print("\n| longest chunk (chars) | segments | SER | syllables/s |\n|---|---:|---:|---:|")
    for band in ["1-20", "21-40", "41-60", ">60"]:
        syl, err, n, sec = bands.get(band, [0, 0, 0, 0.0])
        if n:
            print(f"| {band} | {n} | {err / syl * 100:.2f} % | {syl / sec:.2f} |")
    print("\n| position in its chunk | syllables | wrong | share |\n|---|---:|---:|---:|")
    for w, (n, wrong) in sorted(positions.items(), key=lambda x: (x[0] != "first", x[0] != "middle", -x[1][0])):
        print(f"| {w} | {n} | {wrong} | {wrong / n * 100:.1f} % |")
    print("\nexamples:")
    for c in CLASSES:
        for e in examples[c][:6]:
            print(f"  {c}: {e}")
    sys.stdout.flush()
    print(f"\n{args.worst} worst segments:")
    for s in sorted(segments, key=lambda s: -s["syl_err"])[: args.worst]:
        if not s["syl_err"]:
            break
        print(f"  {s['id']} {s['voice']} {s['syl_err']}/{s['n_syl']} {s['classes']}\n"
              f"    sent {s['ref']}\n    hear {s['hyp']}")
    if args.json:
        json.dump({"classes": dict(counts), "tones": dict(tones), "homophones": homophones,
                   "unaligned": unaligned, "segments": segments,
                   "bands": {k: v for k, v in bands.items()},
                   "positions": {k: v for k, v in positions.items()}},
                  open(args.json, "w", encoding="utf-8"), ensure_ascii=False, indent=1)


if __name__ == "__main__":
    sys.exit(main())
