//! `tingshu voices [--voices FILE] [--check NAME]`: what a voices file
//! offers, and a quick test of one voice.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;

use super::{EXIT_OK, EXIT_PARTIAL};
use crate::cli::VoicesArgs;
use crate::config::VoicesConfig;
use crate::frontend;
use crate::synth::SynthRequest;
use crate::synth::kind::API_KEY_ENV;
use crate::synth::kokoro::KokoroFiles;

/// The phrase `--check` reads.
pub const TEST_PHRASE: &str = "你好，这是一段试音。今天的天气很不错。";

pub async fn run(args: &VoicesArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    let config = VoicesConfig::load(args.voices.as_deref())?;
    let Some(name) = &args.check else {
        print!("{}", listing(&config));
        return Ok(EXIT_OK);
    };
    if !config.voices.contains_key(name) {
        let known: Vec<&str> = config.voices.keys().map(String::as_str).collect();
        bail!(
            "{}: no voice '{name}' (known: {})",
            config.source,
            known.join(", ")
        );
    }
    let backend = config.voices[name].backend.clone();
    let client = config.build_client(worker_program, None);
    let spoken = frontend::prepare(TEST_PHRASE);
    let request = SynthRequest {
        text: spoken.text,
        pinyin: spoken.pinyin_words,
        voice: config.voice_settings(name),
    };
    let start = Instant::now();
    match client.synthesize(&backend, &request).await {
        Ok(done) => {
            println!(
                "{name}: ok via {} — latency {:.0} ms, {:.2} s of audio at {} Hz",
                done.backend,
                start.elapsed().as_secs_f64() * 1000.0,
                done.clip.duration_s(),
                done.clip.sample_rate
            );
            Ok(EXIT_OK)
        }
        Err(e) => {
            println!(
                "{name}: failed after {:.0} ms: {e}",
                start.elapsed().as_secs_f64() * 1000.0
            );
            Ok(EXIT_PARTIAL)
        }
    }
}

/// Where the neural voice is and which packs are installed, or how to
/// install it.
pub fn neural_status(files: &KokoroFiles) -> String {
    if !files.installed() {
        return format!(
            "neural voice (Kokoro-82M): not installed in {} — install it with scripts/install-kokoro.sh (about 130 MB)\n",
            files.root.display()
        );
    }
    let packs = files.installed_packs();
    let mut out = format!(
        "neural voice (Kokoro-82M): {}\n  model   {}\n  runtime {}\n  packs   ",
        files.root.display(),
        files.model.display(),
        files.runtime.display()
    );
    let (female, male): (Vec<&str>, Vec<&str>) = packs.iter().partition(|p| p.starts_with("zf_"));
    out.push_str(&format!(
        "female {} · male {}\n",
        female.join(" "),
        male.join(" ")
    ));
    let missing: Vec<&str> = crate::synth::kokoro::files::PACKS
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !packs.contains(n))
        .collect();
    if !missing.is_empty() {
        out.push_str(&format!(
            "  missing {} (rerun scripts/install-kokoro.sh)\n",
            missing.join(" ")
        ));
    }
    out
}

/// The human-readable listing of backends, voices and casting.
pub fn listing(config: &VoicesConfig) -> String {
    let mut out = format!("voices file: {}\n\n", config.source);
    out.push_str(&neural_status(&KokoroFiles::locate(None)));
    out.push_str("\nbackends:\n");
    for (name, backend) in &config.backends {
        let client = &config.clients[name];
        let mut line = format!("  {name:<12} {:<8}", backend.type_name());
        if let Some(n) = client.max_in_flight {
            line.push_str(&format!(" max_in_flight={n}"));
        }
        if let Some(rate) = &client.rate_limit {
            line.push_str(&format!(" rate_limit={rate}"));
        }
        if let Some(fallback) = &client.fallback {
            line.push_str(&format!(" fallback={fallback}"));
        }
        let kind = backend.kind();
        if let Some(secret) = kind.secrets().iter().find(|s| s.key == API_KEY_ENV) {
            line.push_str(&format!(" key=${}", secret.var));
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if let Some(note) = kind.listing_note() {
            out.push_str(&note);
        }
    }
    out.push_str("\nvoices:\n");
    for (name, voice) in &config.voices {
        out.push_str(&format!(
            "  {name:<12} {}:{} speed={}{}\n",
            voice.backend,
            voice.voice,
            voice.speed,
            voice
                .pitch
                .map(|p| format!(" pitch={p}"))
                .unwrap_or_default()
        ));
    }
    let c = &config.casting;
    out.push_str(&format!("\ncasting:\n  narrator  = {}\n", c.narrator));
    for (role, voice) in [
        ("dialogue", &c.dialogue),
        ("male", &c.male),
        ("female", &c.female),
    ] {
        if let Some(voice) = voice {
            out.push_str(&format!("  {role:<9} = {voice}\n"));
        }
    }
    for (role, more) in [("male_more", &c.male_more), ("female_more", &c.female_more)] {
        if !more.is_empty() {
            out.push_str(&format!("  {role:<9} = {}\n", more.join(", ")));
        }
    }
    for (who, voice) in &c.characters {
        out.push_str(&format!("  {who} = {voice}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_default_voices() {
        let config = VoicesConfig::load(Some(std::path::Path::new("voices/espeak.toml"))).unwrap();
        let text = listing(&config);
        assert!(text.contains("  local        espeak"), "{text}");
        assert!(
            text.contains("  narrator     local:cmn-latn-pinyin speed=1 pitch=35"),
            "{text}"
        );
        assert!(text.contains("  dialogue  = dialogue"), "{text}");
    }

    #[test]
    fn lists_each_backends_key_variable() {
        let text = "[backends.server]\ntype = \"openai\"\nbase_url = \"http://h/v1\"\napi_key_env = \"TTS_API_KEY\"\nmax_in_flight = 2\n\n[backends.open]\ntype = \"http\"\nurl = \"http://h/\"\nfallback = \"server\"\n\n[backends.cloud]\ntype = \"azure\"\nrate_limit = \"20/60s\"\n\n[backends.piper]\ntype = \"command\"\nprogram = \"piper\"\n\n[voices.v]\nbackend = \"server\"\nvoice = \"alloy\"\n\n[casting]\nnarrator = \"v\"\n";
        let config = VoicesConfig::parse_with_env(text, "k.toml", &|_| Some("set".into())).unwrap();
        let text = listing(&config);
        let backends = text
            .split_once("\nbackends:\n")
            .and_then(|(_, rest)| rest.split_once("\n\n"))
            .map(|(backends, _)| backends)
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(
            backends,
            "  cloud        azure    rate_limit=20/60s key=$AZURE_SPEECH_KEY\n  open         http     fallback=server\n  piper        command\n  server       openai   max_in_flight=2 key=$TTS_API_KEY"
        );
    }
}
