//! Stopping a batch run or daemon cleanly: the first SIGTERM/SIGINT asks
//! for a stop (finished chapter files are kept, chapters in progress are
//! left for the next run); a second one exits at once.

use tokio::sync::watch;

/// Set once SIGTERM or SIGINT arrives; a second SIGINT/SIGTERM exits at once.
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// Listens for SIGTERM and SIGINT from now on.
    pub fn on_signals() -> std::io::Result<Shutdown> {
        use tokio::signal::unix::{SignalKind, signal};
        let (tx, rx) = watch::channel(false);
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
            let _ = tx.send(true);
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            std::process::exit(i32::from(crate::error::EXIT_FATAL));
        });
        Ok(Shutdown(rx))
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once a stop was requested.
    pub async fn wait(&mut self) {
        loop {
            if *self.0.borrow_and_update() {
                return;
            }
            if self.0.changed().await.is_err() {
                if *self.0.borrow() {
                    return;
                }
                std::future::pending::<()>().await;
            }
        }
    }
}
