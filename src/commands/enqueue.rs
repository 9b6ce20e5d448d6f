//! `tingshu enqueue BOOK… --queue URL`: every chapter of each book as
//! idempotent tasks on a shared queue ([`crate::queue::enqueue`]), for
//! `tingshu worker` processes on any number of machines.

use super::EXIT_OK;
use super::select::ChapterSelection;
use crate::book::read_book;
use crate::cli::EnqueueArgs;
use crate::names::sanitize_file_name;
use crate::queue::enqueue::{EnqueueJob, enqueue_plans, plan_jobs};

/// Runs `enqueue`. Every book is read and planned before anything is
/// enqueued, so bad input adds nothing.
pub async fn run(args: &EnqueueArgs) -> anyhow::Result<u8> {
    let mut jobs = Vec::new();
    for book in &args.books {
        let chapters = match &args.chapters {
            Some(spec) => {
                let count = read_book(book)?.script.chapters.len();
                Some(ChapterSelection::parse(spec)?.resolve(spec, count)?)
            }
            None => None,
        };
        let name = book
            .file_stem()
            .map(|s| sanitize_file_name(&s.to_string_lossy()))
            .unwrap_or_else(|| "book".into());
        jobs.push(EnqueueJob {
            name,
            book: book.clone(),
            voices: args.voices.clone(),
            out: args.out.clone(),
            chapters,
            cast: args.cast.clone(),
            lexicon: args.lexicon.clone(),
            formats: args.format.clone(),
        });
    }
    let plans = plan_jobs(&jobs)?;
    let queue = crate::queue::connect(&args.queue, 2).await?;
    for (job, report) in jobs
        .iter()
        .zip(enqueue_plans(queue.as_ref(), &plans).await?)
    {
        eprintln!(
            "{}: {} tasks planned, {} new",
            job.name, report.planned, report.added
        );
    }
    Ok(EXIT_OK)
}
