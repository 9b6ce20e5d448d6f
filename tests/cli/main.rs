//! tingshu's integration tests as one binary (the crate is linked once, not
//! once per file): a module per area drives the real `tingshu` binary, the
//! library, the real engines and tools, and fake servers started here;
//! `support` holds what the modules share.
//!
//! Run one area with `cargo test --release --test cli messy::`, one test by
//! its name (`cargo test --release --test cli fixtures_match_goldens`).

mod support;

mod backends;
mod batch;
mod build;
mod docs;
mod dumps;
mod epub;
mod espeak;
mod faults;
mod frontend;
mod messy;
mod neural;
mod outputs;
mod pipeline;
mod preview;
mod queue;
mod render_paths;
mod serve;
mod split;
mod studio;
