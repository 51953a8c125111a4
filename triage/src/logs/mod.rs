//! TEMPORARY shim until the logs branch lands.
use std::borrow::Cow;
use std::path::Path;
#[derive(Default)]
pub struct TailOptions;
pub struct Tail { pub bytes: Vec<u8>, pub lines: usize, pub file_len: u64, pub truncated: bool }
impl Tail { pub fn text(&self) -> Cow<'_, str> { String::from_utf8_lossy(&self.bytes) } }
#[derive(Debug, thiserror::Error)]
#[error("x")]
pub struct TailError;
pub fn tail_lines(_p: &Path, _n: usize, _o: &TailOptions) -> Result<Tail, TailError> { Err(TailError) }
pub fn tail_bytes(_p: &Path, _n: u64, _o: &TailOptions) -> Result<Tail, TailError> { Err(TailError) }
