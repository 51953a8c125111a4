//! Integer arguments that also accept their decimal text (`"42"`): some clients (the MCP
//! Inspector's CLI among them) send every argument as a string. Anything else is still an
//! error naming the value.

use serde::{Deserialize, Deserializer, de::Error};

#[derive(Deserialize)]
#[serde(untagged)]
enum IntOrText {
    Int(i64),
    Text(String),
}

fn parse<'de, D: Deserializer<'de>>(v: IntOrText) -> Result<i64, D::Error> {
    match v {
        IntOrText::Int(n) => Ok(n),
        IntOrText::Text(t) => t.trim().parse().map_err(|_| D::Error::custom(format!("`{t}` is not an integer"))),
    }
}

pub fn int<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    parse::<D>(IntOrText::deserialize(d)?)
}

pub fn opt_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Option::<IntOrText>::deserialize(d)? {
        Some(v) => parse::<D>(v).map(Some),
        None => Ok(None),
    }
}

pub fn opt_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    opt_int(d)?
        .map(|n| u32::try_from(n).map_err(|_| D::Error::custom(format!("{n} is out of range (0 to {})", u32::MAX))))
        .transpose()
}

pub fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    opt_int(d)?.map(|n| u64::try_from(n).map_err(|_| D::Error::custom(format!("{n} must not be negative")))).transpose()
}

pub fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum BoolOrText {
        Bool(bool),
        Text(String),
    }
    match Option::<BoolOrText>::deserialize(d)? {
        None => Ok(None),
        Some(BoolOrText::Bool(b)) => Ok(Some(b)),
        Some(BoolOrText::Text(t)) => match t.trim() {
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            _ => Err(D::Error::custom(format!("`{t}` is not true or false"))),
        },
    }
}
