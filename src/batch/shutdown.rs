//! Stopping a batch run or daemon cleanly: the first SIGTERM/SIGINT asks
//! for a stop (finished chapter files are kept, chapters in progress are
//! left for the next run); a second one exits at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

/// Set once SIGTERM or SIGINT arrives; a second SIGINT/SIGTERM exits at once.
#[derive(Debug, Clone)]
pub struct Shutdown {
    rx: watch::Receiver<bool>,
    /// The same, for blocking code (an ffmpeg encode polls it).
    flag: Arc<AtomicBool>,
}

impl Shutdown {
    /// Listens for SIGTERM and SIGINT from now on.
    pub fn on_signals() -> std::io::Result<Shutdown> {
        use tokio::signal::unix::{SignalKind, signal};
        let (tx, rx) = watch::channel(false);
        let flag = Arc::new(AtomicBool::new(false));
        let set = Arc::clone(&flag);
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            eprintln!(
                "stopping: finished chapter files are kept, chapters in progress are left for the next run (signal again to quit at once)"
            );
            set.store(true, Ordering::SeqCst);
            let _ = tx.send(true);
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            std::process::exit(i32::from(crate::error::EXIT_FATAL));
        });
        Ok(Shutdown { rx, flag })
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst) || *self.rx.borrow()
    }

    /// A flag set when a stop is requested, for blocking work (encodes).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }

    /// Resolves once a stop was requested.
    pub async fn wait(&mut self) {
        loop {
            if *self.rx.borrow_and_update() {
                return;
            }
            if self.rx.changed().await.is_err() {
                if *self.rx.borrow() {
                    return;
                }
                std::future::pending::<()>().await;
            }
        }
    }
}
