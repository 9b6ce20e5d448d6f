//! The embedded espeak-ng backend through its worker processes (the real
//! binary): a request gives the same audio whatever came before it.

use std::path::PathBuf;

use tingshu::synth::espeak::{Espeak, EspeakConfig};
use tingshu::synth::{SynthRequest, Synthesizer, VoiceSettings};

use crate::support::cli::BIN;

fn request(voice: &str, pitch: u8, pinyin: &str) -> SynthRequest {
    SynthRequest {
        text: String::new(),
        pinyin: pinyin.to_owned(),
        voice: VoiceSettings {
            name: voice.to_owned(),
            voice: voice.to_owned(),
            speed: 1.0,
            pitch: Some(pitch),
            style: None,
            role: None,
        },
    }
}

/// libespeak-ng keeps state from every voice it loads: a worker process
/// that switched voices back and forth (about 70 times was enough) began to
/// return cut-off audio. Workers now keep one voice each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alternating_voices_give_the_same_audio_every_time() {
    let config: EspeakConfig = toml::from_str("workers = 1").unwrap();
    let espeak = Espeak::new("local", config, Some(PathBuf::from(BIN)));
    let a = request(
        "cmn-latn-pinyin",
        35,
        "hou2 wang2 zhen1 ge4 qu4 er3 duo5 li3 na2 chu1 tuo1 fang4 zhang3 shang4 jiao4",
    );
    let b = request(
        "cmn-latn-pinyin+m3",
        70,
        "deng1 ta3 de5 guang1 zhao4 zhe5 hei1 an4 de5 hai3 mian4?",
    );
    let first_a = espeak.synthesize(&a).await.unwrap();
    let first_b = espeak.synthesize(&b).await.unwrap();
    assert!(first_a.duration_s() > 2.0, "{}", first_a.duration_s());
    assert!(first_b.duration_s() > 1.0, "{}", first_b.duration_s());
    for round in 0..150 {
        let again_a = espeak.synthesize(&a).await.unwrap();
        let again_b = espeak.synthesize(&b).await.unwrap();
        assert_eq!(again_a.samples, first_a.samples, "voice a, round {round}");
        assert_eq!(again_b.samples, first_b.samples, "voice b, round {round}");
    }
}

fn backend(workers: usize) -> Espeak {
    let config: EspeakConfig = toml::from_str(&format!("workers = {workers}")).unwrap();
    Espeak::new("local", config, Some(PathBuf::from(BIN)))
}

fn mixed_requests() -> Vec<SynthRequest> {
    let lines = [
        "chuan2 zai4 wu4 li3 man4 man4 kao4 an4.",
        "ni3 ting1 dao4 le5 ma5?",
        "shan1 jiao3 xia4 de5 cun1 zi5 hai2 liang4 zhe5 deng1.",
        "ta1 ba3 xin4 feng1 ya1 zai4 zhen3 tou5 di3 xia4.",
    ];
    (0..24)
        .map(|i| {
            let (voice, pitch) = if i % 3 == 0 {
                ("cmn-latn-pinyin+m3", 70)
            } else {
                ("cmn-latn-pinyin", 35)
            };
            request(voice, pitch, lines[i % lines.len()])
        })
        .collect()
}

/// Children of one worker run side by side; each still gives the audio a
/// lone request gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_together_give_the_same_audio_as_one_at_a_time() {
    let requests = mixed_requests();
    let alone = backend(1);
    let mut expected = Vec::new();
    for r in &requests {
        expected.push(alone.synthesize(r).await.unwrap());
    }
    let together = backend(6);
    let clips = futures::future::join_all(requests.iter().map(|r| together.synthesize(r))).await;
    for (i, (clip, want)) in clips.into_iter().zip(&expected).enumerate() {
        let clip = clip.unwrap();
        assert!(clip.duration_s() > 0.5, "request {i}");
        assert_eq!(clip.samples, want.samples, "request {i}");
    }
}

/// A worker that dies fails only the requests it held; the next request
/// starts a new worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_is_replaced() {
    let espeak = backend(2);
    let r = request("cmn-latn-pinyin", 35, "ye4 feng1 chui1 guo4 he2 an4.");
    let first = espeak.synthesize(&r).await.unwrap();
    // This backend's workers only: other tests run theirs meanwhile.
    let pids = espeak.worker_ids();
    assert_eq!(pids.len(), 1);
    for pid in &pids {
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
    }
    // The reply reader notices the end of the worker's output; until it
    // does, a request may still go to the dead worker and fail.
    let mut again = espeak.synthesize(&r).await;
    for _ in 0..50 {
        if again.is_ok() {
            break;
        }
        let err = again.unwrap_err().to_string();
        assert!(err.contains("worker"), "{err}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        again = espeak.synthesize(&r).await;
    }
    assert_eq!(again.unwrap().samples, first.samples);
    let now = espeak.worker_ids();
    assert_eq!(now.len(), 1);
    assert!(now.iter().all(|pid| !pids.contains(pid)));
}

/// Latin text reaches espeak-ng as tokens of its own, never glued to a
/// syllable, and is spoken: each passage with QQ, GDP, AK-47 or iPhone
/// takes clearly longer than the same passage without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latin_tokens_are_sent_apart_and_spoken() {
    let espeak = backend(2);
    for (with, without) in [
        ("他收到一条QQ消息。", "他收到一条消息。"),
        ("今年的GDP增长很快。", "今年的增长很快。"),
        ("他举起一把AK-47。", "他举起一把。"),
        ("她用iPhone拍了一张照片。", "她用拍了一张照片。"),
    ] {
        let spoken = tingshu::frontend::prepare(with).pinyin;
        for token in spoken.split(' ') {
            let t = token.trim_end_matches([',', '.', '!', '?']);
            let latin = !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphabetic());
            let syllable = t.len() > 1
                && t.ends_with(|c: char| c.is_ascii_digit())
                && t[..t.len() - 1].bytes().all(|b| b.is_ascii_lowercase());
            assert!(latin || syllable, "{with}: token {token:?} in {spoken:?}");
        }
        let long = espeak
            .synthesize(&request("cmn-latn-pinyin", 35, &spoken))
            .await
            .unwrap();
        let short = espeak
            .synthesize(&request(
                "cmn-latn-pinyin",
                35,
                &tingshu::frontend::prepare(without).pinyin,
            ))
            .await
            .unwrap();
        assert!(
            long.duration_s() > short.duration_s() + 0.25,
            "{with}: {:.2} s against {:.2} s without the Latin token",
            long.duration_s(),
            short.duration_s()
        );
    }
}
