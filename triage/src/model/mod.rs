//! The job model: pure data types every other layer speaks (DESIGN.md, bottom layer).
//!
//! No I/O here. Parsing and validation of the values (memory, runtime, statuses) live beside
//! the types so that every surface refuses bad input the same way.

mod classification;
mod job;
mod names;
mod resources;
mod status;

pub use classification::{Action, Classification, EntryClass, Strategy, SuggestedAction, Verdict};
pub use job::{Attempt, Job, LogStream, Resources, STORE_FORMAT, SchedulerState, UnknownSchedulerState, Workflow};
pub use names::serde_name;
pub use resources::{Memory, ResourceError, Runtime};
pub use status::{JobStatus, UnknownStatus};
