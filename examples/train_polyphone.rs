//! Fits the polyphone model on CPP-format data and reports k-fold
//! cross-validated accuracy (run by `scripts/gen-polyphone-model.sh`).
//!
//! Usage: train_polyphone SENT LB [--folds K] [--out MODEL.tsv]
//! SENT has one sentence per line with the target character wrapped in ▁…▁;
//! LB has its gold pinyin on the same line (ü written u:).

use std::process::ExitCode;

use tingshu::frontend::Lexicon;
use tingshu::frontend::pinyin::Analysis;
use tingshu::frontend::polyphone::{Example, Model, correct, cross_validate, train};

const EPOCHS: usize = 10;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("train_polyphone: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (sent, lb) = match args.as_slice() {
        [s, l, ..] => (s.clone(), l.clone()),
        _ => return Err("usage: train_polyphone SENT LB [--folds K] [--out MODEL.tsv]".into()),
    };
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let folds: usize =
        flag("--folds").map_or(Ok(5), |k| k.parse().map_err(|_| format!("bad --folds {k}")))?;
    let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("cannot read {p}: {e}"));
    let (sent_text, lb_text) = (read(&sent)?, read(&lb)?);
    let lexicon = Lexicon::new();
    let mut examples = Vec::new();
    let (mut total, mut baseline, mut shipped, mut no_candidate) = (0, 0, 0, 0);
    for (n, (line, gold)) in sent_text.lines().zip(lb_text.lines()).enumerate() {
        let Some((before, rest)) = line.split_once('▁') else {
            return Err(format!("{sent} line {}: no ▁ marker", n + 1));
        };
        let Some((target, after)) = rest.split_once('▁') else {
            return Err(format!("{sent} line {}: unclosed ▁ marker", n + 1));
        };
        let gold = gold.trim().replace("u:", "v");
        let clean = format!("{before}{target}{after}");
        let index = before.chars().count();
        total += 1;
        let analysis = Analysis::new(&clean, &lexicon);
        let Some((features, word)) = analysis.features(index) else {
            no_candidate += 1;
            continue;
        };
        if Model::default().read(&features).is_some_and(|r| r == gold) {
            baseline += 1;
        }
        if analysis
            .reading(index, Model::embedded())
            .is_some_and(|r| r == gold)
        {
            shipped += 1;
        }
        let Some(&gold) = features.candidates.iter().find(|c| **c == gold) else {
            no_candidate += 1;
            continue;
        };
        let word = word.to_owned();
        examples.push(Example {
            features,
            gold,
            word,
        });
    }
    let pct = |a: usize| 100.0 * a as f64 / total as f64;
    println!("examples: {total} ({no_candidate} whose gold reading is not a candidate)");
    println!(
        "dictionary only (phrase, else most common reading): {baseline}/{total} = {:.2}%",
        pct(baseline)
    );
    println!(
        "embedded model on this data (trained on it if it is cpp-dev): {shipped}/{total} = {:.2}%",
        pct(shipped)
    );
    let per_fold = cross_validate(&examples, folds, EPOCHS);
    // The total is over every sentence (one whose gold reading is not a
    // candidate is wrong); each fold's figure is over the examples it holds.
    let cv_correct: usize = per_fold.iter().map(|(right, _)| right).sum();
    let fold_pct: Vec<f64> = per_fold
        .iter()
        .map(|&(right, n)| 100.0 * right as f64 / n as f64)
        .collect();
    let figures: Vec<String> = fold_pct.iter().map(|p| format!("{p:.2}%")).collect();
    println!(
        "{folds}-fold cross-validated accuracy: {cv_correct}/{total} = {:.2}%; per fold {} (mean {:.2}%)",
        pct(cv_correct),
        figures.join(" "),
        fold_pct.iter().sum::<f64>() / fold_pct.len() as f64
    );
    if let Some(out) = flag("--out") {
        let model = train(&examples, EPOCHS);
        println!(
            "fitted model on its own training data: {:.2}%",
            pct(correct(&model, &examples))
        );
        if std::env::var_os("TRAIN_DEBUG").is_some() {
            for e in &examples {
                let p = model.read(&e.features);
                if p.as_deref() != Some(e.gold) {
                    eprintln!(
                        "{} gold {} got {:?} dict {:?} cands {:?} word {}",
                        e.features.c, e.gold, p, e.features.dict, e.features.candidates, e.word
                    );
                }
            }
        }
        let mut file = std::io::BufWriter::new(
            std::fs::File::create(&out).map_err(|e| format!("cannot create {out}: {e}"))?,
        );
        model
            .write(&mut file)
            .map_err(|e| format!("cannot write {out}: {e}"))?;
        println!("model written to {out}");
    }
    Ok(())
}
