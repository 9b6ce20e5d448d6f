//! `tingshu serve [LIBRARY]`: the library's files and feeds, and speech for
//! Legado and OpenAI clients (see [`crate::serve`]); prints the base URL as
//! the first line of stdout.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};

use super::EXIT_OK;
use crate::admission::{HostRule, reachable_addr};
use crate::cli::ServeArgs;
use crate::serve::{ServeOptions, Server, router};

pub async fn run(args: &ServeArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    let loopback = args.bind.ip().is_loopback();
    if !loopback && args.token.is_none() {
        bail!(
            "--bind {}: not a loopback address; give --token too (or TINGSHU_SERVE_TOKEN), so that only people with it can use the server",
            args.bind
        );
    }
    if let Some(t) = &args.token {
        let ok = t.len() >= 8
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'));
        if !ok {
            bail!("--token: use at least 8 letters, digits and - _ . ~ (it goes into URLs)");
        }
    }
    if !args.library.is_dir() {
        bail!(
            "{}: no such directory (the library: what build --out names)",
            args.library.display()
        );
    }
    if args.max_chars == 0 || args.max_syntheses == 0 {
        bail!("--max-chars and --max-syntheses must be at least 1");
    }
    let options = ServeOptions {
        library: args.library.clone(),
        voices: args.voices.clone(),
        lexicon: args.lexicon.clone(),
        cache: args
            .cache
            .clone()
            .unwrap_or_else(|| args.library.join(".cache")),
        token: args.token.clone(),
        hosts: if loopback {
            HostRule::loopback()
        } else {
            HostRule::network(&args.allow_host)
        },
        max_body: args.max_body,
        max_chars: args.max_chars,
        max_syntheses: args.max_syntheses,
        max_queued: args.max_queued,
        ffmpeg: args.ffmpeg.clone(),
    };
    let server = Arc::new(Server::open(options, worker_program)?);
    server.warm_up();
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("--bind {}: cannot listen", args.bind))?;
    let addr = reachable_addr(listener.local_addr()?);
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "http://{addr}")?;
        out.flush()?;
    }
    eprintln!(
        "serve: {} — feeds at http://{addr}/<book>/feed.xml, Legado sources at http://{addr}/legado, OpenAI at http://{addr}/v1/audio/speech{}; Ctrl-C stops",
        args.library.display(),
        if args.token.is_some() {
            " (token needed)"
        } else {
            ""
        }
    );
    axum::serve(listener, router(Arc::clone(&server)))
        .with_graceful_shutdown(super::studio::stopped())
        .await
        .context("the server stopped")?;
    server.flush();
    Ok(EXIT_OK)
}
