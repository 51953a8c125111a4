//! The tools' output schemas, as compact as they can be without losing what they say.
//!
//! schemars writes a type used in several places once under `$defs` and points at it with
//! `$ref`, writes an optional value as `anyOf: [X, {type: null}]`, a documented enum as
//! `oneOf` of one `const` per variant, and a Rust integer type as a `format` (`uint32`, not a
//! JSON Schema format). Every subschema costs a client that checks the schema before using it
//! (the official Python SDK does, on the first call of each tool: about 0.2 ms a subschema
//! against the 2020-12 metaschema), and the validation of every answer follows every `$ref`
//! and tries every `oneOf` branch. So the schema is rewritten into the same constraints with
//! fewer subschemas: definitions inlined (none of the tools' types is recursive; a schema that
//! is stays as it was), an optional value as `type: [T, "null"]`, an enum of constants as
//! `enum` (the variants' descriptions go into its description), and no `format` on numbers.
//! Every property keeps its type, its description and whether it is required.
//!
//! A schema so rewritten uses only keywords that mean the same in JSON Schema draft-07 and
//! 2020-12, and it then names draft-07 as its dialect (`$schema`; MCP lets a schema declare
//! its dialect, 2020-12 being only the default). It describes the same answers either way, but
//! a client checks it against its dialect's metaschema first, and 2020-12's is split into
//! vocabularies joined by `$dynamicRef`: the Python SDK took about 10 ms to check
//! `list_pending_failed_jobs`'s schema against it and about 2.5 ms against draft-07's, on the
//! first call. A schema with any other keyword keeps 2020-12.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{Map, Value};

/// The compact output schema of `T` (see the module doc).
///
/// Generated as rmcp generates an output schema (JSON Schema 2020-12, for what the type
/// serializes: an `Option` field always written is required, one skipped when `None` is not;
/// without the top-level `title` and `description`, the Rust type's name and doc), but not
/// through rmcp's helper, which keeps two copies of every full schema in per-thread caches for
/// the life of the process (about 180 KB for our four tools) when only the compact one is used.
pub fn output_schema<T: schemars::JsonSchema>() -> Arc<JsonObject> {
    let settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
    let generated = settings.into_generator().into_root_schema_for::<T>();
    let mut full = match serde_json::to_value(generated) {
        Ok(Value::Object(full)) => full,
        // schemars writes a struct's schema as an object (the tests compare every tool's
        // schema with rmcp's); were it not, the schema would accept any answer, not refuse it.
        _ => Map::new(),
    };
    full.remove("title");
    full.remove("description");
    Arc::new(compact(&full).unwrap_or(full))
}

/// `schema` rewritten; `None` when it has a `$ref` that cannot be inlined (recursive, or not
/// into `$defs`).
pub fn compact(schema: &JsonObject) -> Option<JsonObject> {
    let defs = match schema.get("$defs") {
        Some(Value::Object(d)) => d.clone(),
        _ => Map::new(),
    };
    let mut out = Map::new();
    for (k, v) in schema {
        if k != "$defs" {
            out.insert(k.clone(), rewrite(v, &defs, &mut Vec::new())?);
        }
    }
    let mut out = simplify(out);
    if out.iter().all(|(k, v)| k == "$schema" || same_in_draft_07(k, v)) {
        out.insert("$schema".into(), Value::from(DRAFT_07));
    }
    Some(out)
}

/// The dialect a rewritten schema names (see the module doc).
pub const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";

/// Whether keyword `key` with value `value` (and every subschema in it) means the same in
/// draft-07 as in 2020-12.
fn same_in_draft_07(key: &str, value: &Value) -> bool {
    let schema = |v: &Value| match v {
        Value::Object(o) => o.iter().all(|(k, v)| same_in_draft_07(k, v)),
        Value::Bool(_) => true,
        _ => false,
    };
    match key {
        // Annotations and literal values.
        "description" | "title" | "default" | "examples" | "enum" | "const" | "required" | "type" | "format"
        | "pattern" | "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" | "minLength"
        | "maxLength" | "minItems" | "maxItems" | "uniqueItems" | "minProperties" | "maxProperties" => true,
        // One subschema (`items` as an array is a tuple in draft-07 and an error in 2020-12).
        "items" | "additionalProperties" | "propertyNames" | "not" => schema(value),
        // Subschemas by name.
        "properties" | "patternProperties" => value.as_object().is_some_and(|o| o.values().all(schema)),
        // Subschemas in a list.
        "anyOf" | "oneOf" | "allOf" => value.as_array().is_some_and(|a| a.iter().all(schema)),
        // `$ref`, `$defs`, `prefixItems`, `unevaluated*`, `dependent*`, `$dynamicRef`, ...
        _ => false,
    }
}

/// `value` with its `$ref`s inlined and its subschemas simplified. `stack` holds the
/// definitions being inlined (a definition met again is recursive).
fn rewrite(value: &Value, defs: &Map<String, Value>, stack: &mut Vec<String>) -> Option<Value> {
    match value {
        Value::Object(o) => {
            let mut out = Map::new();
            if let Some(Value::String(r)) = o.get("$ref") {
                let name = r.strip_prefix("#/$defs/")?;
                if stack.iter().any(|s| s == name) {
                    return None;
                }
                stack.push(name.to_string());
                let target = rewrite(defs.get(name)?, defs, stack)?;
                stack.pop();
                if let Value::Object(t) = target {
                    out = t;
                }
            }
            for (k, v) in o {
                match k.as_str() {
                    "$ref" => {}
                    // The place's description, then the definition's (which may name what each
                    // of an enum's values means).
                    "description" if o.contains_key("$ref") => {
                        let joined = match (v, out.get("description")) {
                            (Value::String(mine), Some(Value::String(def))) if mine != def => format!("{mine} {def}"),
                            _ => v.as_str().unwrap_or_default().to_string(),
                        };
                        out.insert(k.clone(), Value::from(joined));
                    }
                    // Literal values, not schemas.
                    "enum" | "const" | "required" | "examples" | "default" => {
                        out.insert(k.clone(), v.clone());
                    }
                    _ => {
                        out.insert(k.clone(), rewrite(v, defs, stack)?);
                    }
                }
            }
            Some(Value::Object(simplify(out)))
        }
        Value::Array(a) => a.iter().map(|v| rewrite(v, defs, stack)).collect::<Option<Vec<_>>>().map(Value::Array),
        other => Some(other.clone()),
    }
}

/// One subschema (its children already rewritten): fewer subschemas, same constraints.
fn simplify(mut o: JsonObject) -> JsonObject {
    let is_number = |t: Option<&Value>| match t {
        Some(Value::String(t)) => t == "integer" || t == "number",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer" || t == "number"),
        _ => false,
    };
    if is_number(o.get("type")) {
        o.remove("format");
    }
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = o.get(key) else { continue };
        let Some(merged) = constants(branches).or_else(|| nullable(branches)) else { continue };
        if merged.keys().any(|k| k != "description" && o.contains_key(k)) {
            continue;
        }
        o.remove(key);
        merge(&mut o, merged);
    }
    o
}

/// `branches` that are all string constants (`const` or `enum`, perhaps described), as one
/// `enum` whose description names what each constant means.
fn constants(branches: &[Value]) -> Option<JsonObject> {
    let mut values = Vec::new();
    let mut notes = Vec::new();
    for b in branches {
        let b = b.as_object()?;
        if b.keys().any(|k| !matches!(k.as_str(), "const" | "enum" | "type" | "description")) {
            return None;
        }
        if b.get("type").is_some_and(|t| t != "string") {
            return None;
        }
        let mine: Vec<Value> = match (b.get("const"), b.get("enum")) {
            (Some(c), None) => vec![c.clone()],
            (None, Some(Value::Array(e))) => e.clone(),
            _ => return None,
        };
        if !mine.iter().all(Value::is_string) {
            return None;
        }
        if let Some(Value::String(d)) = b.get("description") {
            let names: Vec<&str> = mine.iter().filter_map(Value::as_str).collect();
            notes.push(format!("`{}`: {}", names.join("`, `"), d.trim_end_matches('.')));
        }
        values.extend(mine);
    }
    let mut out = Map::new();
    out.insert("type".into(), Value::from("string"));
    out.insert("enum".into(), Value::Array(values));
    if !notes.is_empty() {
        out.insert("description".into(), Value::from(format!("{}.", notes.join("; "))));
    }
    Some(out)
}

/// `[X, {type: null}]` (either order) where X has one `type`, as X with `type: [T, "null"]`
/// (and `null` among its `enum` values, when it has some).
fn nullable(branches: &[Value]) -> Option<JsonObject> {
    let [a, b] = branches else { return None };
    let is_null =
        |v: &Value| v.as_object().is_some_and(|o| o.len() == 1 && o.get("type") == Some(&Value::from("null")));
    let x = match (is_null(a), is_null(b)) {
        (false, true) => a,
        (true, false) => b,
        _ => return None,
    };
    let mut x = x.as_object()?.clone();
    let Some(Value::String(t)) = x.get("type") else { return None };
    let t = t.clone();
    x.insert("type".into(), Value::Array(vec![Value::from(t), Value::from("null")]));
    if let Some(Value::Array(values)) = x.get_mut("enum") {
        values.push(Value::Null);
    }
    if x.contains_key("const") {
        return None;
    }
    Some(x)
}

/// Put `merged`'s keywords into `o` (which has none of them but perhaps `description`); a
/// description `o` already has comes first.
fn merge(o: &mut JsonObject, merged: JsonObject) {
    for (k, v) in merged {
        let joined = match (o.get(&k), &v) {
            (Some(Value::String(mine)), Value::String(theirs)) if k == "description" => {
                Value::from(format!("{mine} {theirs}"))
            }
            _ => v,
        };
        o.insert(k, joined);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_schema_of_draft_07_keywords_names_draft_07() {
        let full = obj(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "verdict": {"$ref": "#/$defs/Verdict"},
                "ids": {"type": "array", "items": {"type": "integer", "format": "int64"}},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["verdict", "ids"],
            "$defs": {"Verdict": {"type": "string", "enum": ["transient", "permanent", "unknown"]}},
        }));
        let out = compact(&full).unwrap();
        assert_eq!(out.get("$schema"), Some(&Value::from(DRAFT_07)));
        assert_eq!(out["properties"]["verdict"]["enum"], json!(["transient", "permanent", "unknown"]));
        assert_eq!(out["properties"]["note"]["type"], json!(["string", "null"]));
        assert!(out["properties"]["ids"]["items"].get("format").is_none());
        assert!(!out.contains_key("$defs"));
    }

    #[test]
    fn a_schema_with_a_2020_12_keyword_keeps_2020_12() {
        let dialect = "https://json-schema.org/draft/2020-12/schema";
        let tuple = obj(json!({
            "$schema": dialect,
            "type": "object",
            "properties": {"pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}},
        }));
        assert_eq!(compact(&tuple).unwrap().get("$schema"), Some(&Value::from(dialect)));
        let closed = obj(json!({"$schema": dialect, "type": "object", "unevaluatedProperties": false}));
        assert_eq!(compact(&closed).unwrap().get("$schema"), Some(&Value::from(dialect)));
    }

    #[test]
    fn every_tool_output_schema_names_draft_07() {
        use crate::tools::{ClassifyOut, HintsOut, ListOut, TailOut};
        for schema in [
            output_schema::<ListOut>(),
            output_schema::<TailOut>(),
            output_schema::<HintsOut>(),
            output_schema::<ClassifyOut>(),
        ] {
            assert_eq!(schema.get("$schema"), Some(&Value::from(DRAFT_07)), "{schema:?}");
        }
    }

    /// Generating the schema here, not through rmcp's cached helper, gives the same schema.
    #[test]
    fn output_schemas_are_rmcps_compacted() {
        use crate::tools::{ClassifyOut, HintsOut, ListOut, TailOut};
        use rmcp::handler::server::tool::schema_for_output;
        fn same<T: schemars::JsonSchema + std::any::Any>() {
            let rmcps = compact(&schema_for_output::<T>()).unwrap();
            let ours = output_schema::<T>();
            assert!(ours.contains_key("properties"), "{ours:?}");
            assert_eq!(*ours, rmcps);
        }
        same::<ListOut>();
        same::<TailOut>();
        same::<HintsOut>();
        same::<ClassifyOut>();
    }
}
