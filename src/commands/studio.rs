//! `tingshu studio [BOOK|JOBS.toml]`: serves the studio page (see
//! [`crate::studio`]) and prints its URL as the first line of stdout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};

use super::EXIT_OK;
use crate::admission::HostRule;
use crate::batch::jobs::JobsFile;
use crate::book::source_stem;
use crate::cli::StudioArgs;
use crate::studio::{Studio, StudioOptions, random_token, router};

pub async fn run(args: &StudioArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    let loopback = args.bind.ip().is_loopback();
    if !loopback && args.token.is_none() {
        bail!(
            "--bind {}: not a loopback address; give --token too, so that only \
             people with it can use the studio",
            args.bind
        );
    }
    let token = match &args.token {
        Some(t) => {
            let ok = !t.is_empty()
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'));
            if !ok {
                bail!("--token: use letters, digits and - _ . ~ only (it goes into a URL)");
            }
            t.clone()
        }
        None => random_token().context("cannot read random bytes for a token")?,
    };
    let options = resolve(args, token.clone())?;
    let studio = Arc::new(Studio::open(options, worker_program)?);
    studio.warm_up();
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("--bind {}: cannot listen", args.bind))?;
    let addr = crate::admission::reachable_addr(listener.local_addr()?);
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "http://{addr}/?token={token}")?;
        out.flush()?;
    }
    let o = studio.options();
    eprintln!(
        "studio: {} — cast {}{}, lexicon {}{}; Ctrl-C stops",
        o.book.display(),
        o.cast.display(),
        if o.cast.exists() { "" } else { " (new)" },
        o.lexicon.display(),
        if o.lexicon.exists() { "" } else { " (new)" },
    );
    let stopping = Arc::clone(&studio);
    axum::serve(listener, router(Arc::clone(&studio)))
        .with_graceful_shutdown(async move {
            stopped().await;
            stopping.stop();
        })
        .await
        .context("the studio server stopped")?;
    studio.flush();
    Ok(EXIT_OK)
}

/// Resolves the book, voices, cast and lexicon from the arguments or the
/// job of a jobs file.
fn resolve(args: &StudioArgs, token: String) -> anyhow::Result<StudioOptions> {
    let is_jobs = args
        .book
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let (book, voices, cast, out) = if is_jobs {
        let file = JobsFile::load(&args.book)?;
        let job = match (&args.job, file.jobs.as_slice()) {
            (Some(name), _) => file.select(Some(name))?.remove(0),
            (None, [only]) => only.clone(),
            (None, jobs) => {
                let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
                bail!(
                    "{}: holds {} jobs ({}); pick one with --job",
                    args.book.display(),
                    jobs.len(),
                    names.join(", ")
                );
            }
        };
        (
            job.source,
            args.voices.clone().or(job.voices),
            args.cast.clone().or(job.cast),
            job.out,
        )
    } else {
        if args.job.is_some() {
            bail!("--job needs a jobs file (*.toml) instead of a book");
        }
        (
            args.book.clone(),
            args.voices.clone(),
            args.cast.clone(),
            args.out.clone(),
        )
    };
    let beside = |suffix: &str| -> PathBuf {
        let dir = book.parent().unwrap_or(Path::new(""));
        dir.join(format!("{}.{suffix}.toml", source_stem(&book)))
    };
    let loopback = args.bind.ip().is_loopback();
    let hosts = if loopback {
        HostRule::loopback()
    } else {
        HostRule::network(&args.allow_host)
    };
    Ok(StudioOptions {
        cast: cast.unwrap_or_else(|| beside("cast")),
        lexicon: args.lexicon.clone().unwrap_or_else(|| beside("lexicon")),
        overrides: args
            .overrides
            .clone()
            .unwrap_or_else(|| beside("overrides")),
        book,
        voices,
        out,
        token,
        hosts,
        reads_need_token: !loopback,
        max_syntheses: args.max_syntheses,
        max_queued: args.max_queued,
    })
}

/// Resolves on Ctrl-C or SIGTERM.
pub(crate) async fn stopped() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match term.as_mut() {
                Some(t) => { t.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => {}
    }
}
