//! `tingshu worker --queue URL`: takes tasks from the shared queue until
//! stopped (SIGINT/SIGTERM finish the tasks in hand) or, with
//! `--until-idle`, until nothing is left to run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{EXIT_OK, EXIT_PARTIAL};
use crate::cli::WorkerArgs;
use crate::queue::worker::{self, WorkerOptions};
use crate::queue::{self, TaskQueue};
use crate::synth::cache::Cache;

/// Runs `worker`.
pub async fn run(args: &WorkerArgs, worker_program: Option<PathBuf>) -> anyhow::Result<u8> {
    anyhow::ensure!(args.concurrency >= 1, "--concurrency must be at least 1");
    anyhow::ensure!(args.lease_s >= 1, "--lease must be at least 1 second");
    let concurrency = args.concurrency;
    let cache = Cache::open(&args.cache)?;
    let queue: Arc<dyn TaskQueue> =
        Arc::from(queue::connect(&args.queue, concurrency as u32 + 2).await?);
    let name = args.name.clone().unwrap_or_else(|| {
        let host = std::fs::read_to_string("/etc/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "host".into());
        format!("{host}:{}", std::process::id())
    });
    let options = WorkerOptions {
        name: name.clone(),
        concurrency,
        lease: Duration::from_secs(args.lease_s),
        poll: Duration::from_millis(args.poll_ms),
        until_idle: args.until_idle,
        simulated_latency: Duration::from_millis(args.simulate_latency_ms),
        worker_program,
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("stopping: finishing the tasks in hand");
        let _ = stop_tx.send(true);
    });
    tracing::info!(worker = %name, concurrency, cache = %cache, "worker started");
    let report = worker::run(Arc::clone(&queue), cache, options, stop_rx).await?;
    eprintln!(
        "worker {name}: {} chunks synthesized ({} already cached), {} chapters mixed, {} manifests written, {} failures ({} parked)",
        report.synthesized, report.reused, report.mixed, report.books, report.failed, report.parked
    );
    let parked = queue.totals().await?.parked;
    Ok(if parked > 0 { EXIT_PARTIAL } else { EXIT_OK })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
