//! Job resources: memory (`8g`, `512m`) and runtime (ISO-8601 `PT2H`), parsed and validated.
//!
//! Both keep a canonical text form for the wire and an exact number (bytes, seconds) for the
//! comparisons the engine makes (a retry may only grow a resource, and only up to a cap).

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a memory or runtime string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    #[error(
        "invalid memory `{input}`: {why}; write a positive number with a unit, like `512m`, `8g` or `1.5t` (k, m, g, t; binary multiples)"
    )]
    Memory { input: String, why: &'static str },
    #[error(
        "invalid runtime `{input}`: {why}; write an ISO-8601 duration like `PT30M`, `PT2H` or `P1DT12H` (or `2h 30m`)"
    )]
    Runtime { input: String, why: String },
}

const KIB: u64 = 1024;

/// An amount of memory, exact to the byte. Written like Torc and Slurm: `512m`, `8g`, `1.5t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Memory {
    bytes: u64,
}

impl Memory {
    /// Memory of exactly `bytes` bytes.
    pub fn from_bytes(bytes: u64) -> Memory {
        Memory { bytes }
    }

    /// The amount in bytes.
    pub fn bytes(self) -> u64 {
        self.bytes
    }

    /// This amount times `factor`, rounded up to a whole mebibyte.
    pub fn scaled(self, factor: f64) -> Memory {
        let mib = (self.bytes as f64 * factor / (KIB * KIB) as f64).ceil();
        Memory { bytes: (mib as u64).saturating_mul(KIB * KIB) }
    }
}

impl FromStr for Memory {
    type Err = ResourceError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |why| ResourceError::Memory { input: input.to_string(), why };
        let s = input.trim().to_ascii_lowercase();
        if s.is_empty() {
            return Err(err("it is empty"));
        }
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let unit = unit.trim();
        let shift = match unit.trim_end_matches('b').trim_end_matches('i') {
            "k" => 1,
            "m" => 2,
            "g" => 3,
            "t" => 4,
            "" if unit.is_empty() => return Err(err("it has no unit")),
            _ => return Err(err("the unit is not one of k, m, g, t")),
        };
        let value: f64 = num.parse().map_err(|_| err("the number does not parse"))?;
        if !value.is_finite() || value <= 0.0 {
            return Err(err("it must be greater than zero"));
        }
        let bytes = value * (KIB.pow(shift)) as f64;
        if bytes >= u64::MAX as f64 / 2.0 {
            return Err(err("it is too large"));
        }
        Ok(Memory { bytes: bytes.round() as u64 })
    }
}

impl fmt::Display for Memory {
    /// The shortest exact form: `8g`, `1536m`, `100k`, or bytes as `k` with a fraction.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, shift) in [("t", 4u32), ("g", 3), ("m", 2), ("k", 1)] {
            let m = KIB.pow(shift);
            if self.bytes >= m && self.bytes.is_multiple_of(m) {
                return write!(f, "{}{unit}", self.bytes / m);
            }
        }
        write!(f, "{}k", (self.bytes as f64 / KIB as f64 * 1000.0).round() / 1000.0)
    }
}

/// A wall-clock runtime limit, exact to the second. Written as ISO-8601 (`PT2H`), like Torc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Runtime {
    seconds: u64,
}

impl Runtime {
    /// A runtime of `seconds` seconds.
    pub fn from_seconds(seconds: u64) -> Runtime {
        Runtime { seconds }
    }

    /// The runtime in seconds.
    pub fn seconds(self) -> u64 {
        self.seconds
    }

    /// This runtime times `factor`, rounded up to a whole minute.
    pub fn scaled(self, factor: f64) -> Runtime {
        let minutes = (self.seconds as f64 * factor / 60.0).ceil() as u64;
        Runtime { seconds: minutes.saturating_mul(60) }
    }
}

impl FromStr for Runtime {
    type Err = ResourceError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |why: String| ResourceError::Runtime { input: input.to_string(), why };
        let s = input.trim();
        if s.is_empty() {
            return Err(err("it is empty".into()));
        }
        let span: jiff::Span = s.parse().map_err(|e: jiff::Error| err(e.to_string()))?;
        if span.get_years() != 0 || span.get_months() != 0 {
            return Err(err("years and months have no fixed length".into()));
        }
        let relative = jiff::SpanRelativeTo::days_are_24_hours();
        let total = span.total((jiff::Unit::Second, relative)).map_err(|e| err(e.to_string()))?;
        if !total.is_finite() || total <= 0.0 {
            return Err(err("it must be longer than zero".into()));
        }
        Ok(Runtime { seconds: total.ceil() as u64 })
    }
}

impl fmt::Display for Runtime {
    /// ISO-8601 with hours as the largest unit: `PT2H`, `PT1H30M`, `PT36H`, `PT45S`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (h, m, s) = (self.seconds / 3600, self.seconds / 60 % 60, self.seconds % 60);
        f.write_str("PT")?;
        if h > 0 {
            write!(f, "{h}H")?;
        }
        if m > 0 {
            write!(f, "{m}M")?;
        }
        if s > 0 || self.seconds == 0 {
            write!(f, "{s}S")?;
        }
        Ok(())
    }
}

macro_rules! text_serde {
    ($ty:ty, $name:literal, $desc:literal, $pattern:literal) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = Cow::<str>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({"type": "string", "description": $desc, "pattern": $pattern})
            }
        }
    };
}

text_serde!(
    Memory,
    "Memory",
    "Memory with a unit (k, m, g, t; binary multiples), e.g. `512m`, `8g`.",
    "^\\s*[0-9]+(\\.[0-9]+)?\\s*[kmgtKMGT][iI]?[bB]?\\s*$"
);
text_serde!(
    Runtime,
    "Runtime",
    "A duration, ISO-8601 like `PT2H` or `P1DT12H` (years and months are refused).",
    "^\\s*\\S.*$"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_parses_units() {
        assert_eq!("8g".parse::<Memory>().unwrap().bytes(), 8 << 30);
        assert_eq!("512m".parse::<Memory>().unwrap().bytes(), 512 << 20);
        assert_eq!("512M".parse::<Memory>().unwrap().bytes(), 512 << 20);
        assert_eq!("1.5g".parse::<Memory>().unwrap().bytes(), 1536 << 20);
        assert_eq!("2GiB".parse::<Memory>().unwrap().bytes(), 2 << 30);
        assert_eq!("100k".parse::<Memory>().unwrap().bytes(), 100 << 10);
        assert_eq!(" 1t ".parse::<Memory>().unwrap().bytes(), 1 << 40);
    }

    #[test]
    fn memory_round_trips_canonically() {
        for (input, canon) in [("8g", "8g"), ("8192m", "8g"), ("1.5g", "1536m"), ("1024k", "1m")] {
            let m: Memory = input.parse().unwrap();
            assert_eq!(m.to_string(), canon);
            assert_eq!(m.to_string().parse::<Memory>().unwrap(), m);
        }
    }

    #[test]
    fn memory_errors_say_what_and_how() {
        for bad in ["", "8", "8x", "-1g", "0g", "g", "1.2.3g", "99999999999t"] {
            let e = bad.parse::<Memory>().unwrap_err().to_string();
            assert!(e.contains(&format!("`{bad}`")) && e.contains("like `512m`"), "{bad}: {e}");
        }
    }

    #[test]
    fn memory_scales_up_to_whole_mib() {
        let m: Memory = "1g".parse().unwrap();
        assert_eq!(m.scaled(1.5).to_string(), "1536m");
        assert!(m.scaled(1.01) > m);
    }

    #[test]
    fn runtime_parses_iso_and_friendly() {
        assert_eq!("PT2H".parse::<Runtime>().unwrap().seconds(), 7200);
        assert_eq!("PT1H30M".parse::<Runtime>().unwrap().seconds(), 5400);
        assert_eq!("P1DT12H".parse::<Runtime>().unwrap().seconds(), 36 * 3600);
        assert_eq!("PT45S".parse::<Runtime>().unwrap().seconds(), 45);
        assert_eq!("2h 30m".parse::<Runtime>().unwrap().seconds(), 9000);
        assert_eq!(Runtime::from_seconds(5400).to_string(), "PT1H30M");
        assert_eq!(Runtime::from_seconds(36 * 3600).to_string(), "PT36H");
    }

    #[test]
    fn runtime_errors_say_what_and_how() {
        for bad in ["", "2 hours please", "P1M", "PT0S", "-PT1H", "P1Y"] {
            let e = bad.parse::<Runtime>().unwrap_err().to_string();
            assert!(e.contains(&format!("`{bad}`")) && e.contains("PT2H"), "{bad}: {e}");
        }
    }

    #[test]
    fn serde_uses_text() {
        let m: Memory = serde_json::from_str("\"4g\"").unwrap();
        assert_eq!(serde_json::to_string(&m).unwrap(), "\"4g\"");
        let e = serde_json::from_str::<Memory>("\"4 bananas\"").unwrap_err().to_string();
        assert!(e.contains("4 bananas"), "{e}");
        let r: Runtime = serde_json::from_str("\"PT2H\"").unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), "\"PT2H\"");
    }
}
