use std::process::ExitCode;

use clap::Parser;
use tingshu::cli::{Cli, Command};
use tingshu::commands::{self, EXIT_FATAL};
use tingshu::synth::espeak;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some(espeak::WORKER_ARG) {
        use std::os::fd::AsFd;
        // Plain files on fds 0 and 1: the worker polls its input, and
        // writes replies of any size without a line buffer in between.
        let files = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .and_then(|i| Ok((i, std::io::stdout().as_fd().try_clone_to_owned()?)));
        let Ok((input, output)) = files else {
            return ExitCode::from(EXIT_FATAL);
        };
        let output = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::from(output));
        // SAFETY: this process is single-threaded: worker mode is decided
        // before anything starts a thread, and the worker starts none.
        return match unsafe { espeak::run_worker(std::fs::File::from(input), output) } {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(EXIT_FATAL),
        };
    }
    let cli = Cli::parse();
    let default_level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level)),
        )
        .with_writer(|| tingshu::redact::RedactingWriter(std::io::stderr()))
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!(
                "tingshu: error: {}",
                tingshu::redact::redact(&format!("{e:#}"))
            );
            // An unreachable queue server is a runtime failure, not bad input.
            let unavailable = e
                .downcast_ref::<tingshu::queue::QueueError>()
                .is_some_and(|q| q.is_unavailable());
            ExitCode::from(if unavailable {
                commands::EXIT_PARTIAL
            } else {
                EXIT_FATAL
            })
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Runtime::new()?;
    let worker_program = std::env::current_exe().ok();
    runtime.block_on(async {
        match &cli.command {
            Command::Build(args) => commands::build::run(args, worker_program).await,
            Command::Split(args) => commands::split::run(args),
            Command::Preview(args) => commands::preview::run(args, worker_program).await,
            Command::Voices(args) => commands::voices::run(args, worker_program).await,
            Command::Batch(args) => commands::batch::run(args, worker_program).await,
            Command::Normalize(args) => commands::normalize::run(args),
            Command::Pinyin(args) => commands::pinyin::run(args),
            Command::Enqueue(args) => commands::enqueue::run(args).await,
            Command::Worker(args) => commands::worker::run(args, worker_program).await,
            Command::QueueStatus(args) => commands::queue_status::run(args).await,
            Command::Studio(args) => commands::studio::run(args, worker_program).await,
            Command::Serve(args) => commands::serve::run(args, worker_program).await,
        }
    })
}
