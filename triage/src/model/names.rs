//! The one conversion from an enum value to the name its JSON uses.

use serde::Serialize;

/// The name serde gives a unit enum value, as the JSON says it (`needs_review`, not
/// `NeedsReview`): text renderings use it, so people and programs read one vocabulary.
/// Empty for a value that does not serialize to a string.
pub fn serde_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_the_json_names() {
        assert_eq!(super::serde_name(&crate::model::Strategy::RetryWithJitter), "retry_with_jitter");
        assert_eq!(super::serde_name(&crate::model::JobStatus::PendingFailed), "pending_failed");
    }
}
