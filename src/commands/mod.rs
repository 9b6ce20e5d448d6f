//! The CLI commands. Each returns the process exit status or a fatal error.

pub mod batch;
pub mod build;
pub mod enqueue;
pub mod normalize;
pub mod pinyin;
pub mod preview;
pub mod queue_status;
pub mod select;
pub mod serve;
pub mod split;
pub mod studio;
pub mod voices;
pub mod worker;

pub use crate::error::{EXIT_FATAL, EXIT_OK, EXIT_PARTIAL};
