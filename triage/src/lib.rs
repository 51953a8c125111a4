//! Triage: decide safely what to do with failed batch jobs.
//!
//! The library behind the `triage` CLI and the `triage-mcp` server. Layers, bottom up (see
//! ARCHITECTURE.md): [`model`] (pure data), [`backend`] (where jobs live: a directory store,
//! a Torc server), [`catalog`] and [`logs`] (the knowledge: patterns, tails, signatures),
//! [`engine`] (evidence, validation, apply), [`agent`] and [`run`] (`triage run`'s agent
//! chain), [`settings`] (what both binaries resolve from flags and environment). Imports
//! point down only.

pub mod agent;
pub mod backend;
pub mod catalog;
pub mod clients;
pub mod engine;
pub mod fsutil;
pub mod logs;
pub mod metrics;
pub mod model;
pub mod prompts;
pub mod resilience;
pub mod run;
pub mod settings;
pub mod synth;
pub mod watch;
