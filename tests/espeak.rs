//! The embedded espeak-ng backend through its worker processes (the real
//! binary): a request gives the same audio whatever came before it.

use std::path::PathBuf;

use tingshu::synth::espeak::{Espeak, EspeakConfig};
use tingshu::synth::{SynthRequest, Synthesizer, VoiceSettings};

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
    let espeak = Espeak::new(
        "local",
        config,
        Some(PathBuf::from(env!("CARGO_BIN_EXE_tingshu"))),
    );
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
