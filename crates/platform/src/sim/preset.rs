//! Loading a config from TOML, shared by the platform and the I/O presets: a built-in preset's
//! text by name or a file by path, `preset = "NAME"` layering a file over a built-in, and
//! deserialisation whose error names the key at fault.
use crate::sim::error::PlatformError;
use movelab_dram::config::merge_toml;
use serde::de::DeserializeOwned;

/// One family of built-in presets (`presets/DIR/NAME.toml`, compiled in).
pub struct PresetSet {
    /// What a preset of this family is called in messages ("platform", "I/O platform").
    pub kind: &'static str,
    /// How an unknown name is reported ("platform preset"), and an unknown name or path
    /// ("platform preset or file").
    pub unknown: &'static str,
    pub unknown_or_file: &'static str,
    /// Its folder under `presets/`.
    pub dir: &'static str,
    pub presets: &'static [(&'static str, &'static str)],
}

impl PresetSet {
    pub fn names(&self) -> Vec<&'static str> {
        self.presets.iter().map(|(n, _)| *n).collect()
    }

    /// Where a built-in preset lives, as errors name it.
    pub fn source(&self, name: &str) -> String {
        format!("presets/{}/{name}.toml", self.dir)
    }

    /// A built-in preset's TOML.
    pub fn value(&self, name: &str) -> Result<toml::Value, PlatformError> {
        let (_, text) = self
            .presets
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| PlatformError::Unknown {
                kind: self.unknown,
                name: name.into(),
                known: self.names().join(", "),
            })?;
        parse(text, &self.source(name))
    }

    /// A built-in preset's text by name, or a file's by path, and the name errors give it.
    pub fn text(&self, name_or_path: &str) -> Result<(String, String), PlatformError> {
        if let Some((_, t)) = self.presets.iter().find(|(n, _)| *n == name_or_path) {
            return Ok((t.to_string(), self.source(name_or_path)));
        }
        let p = std::path::Path::new(name_or_path);
        if !p.exists() {
            return Err(PlatformError::Unknown {
                kind: self.unknown_or_file,
                name: name_or_path.into(),
                known: self.names().join(", "),
            });
        }
        let text = movelab_dram::config::read_config_text(p).map_err(|what| PlatformError::Io {
            path: name_or_path.into(),
            what,
        })?;
        Ok((text, name_or_path.to_string()))
    }

    /// A built-in preset by name, or a TOML file by path: its TOML and the name errors give it.
    pub fn load(&self, name_or_path: &str) -> Result<(toml::Value, String), PlatformError> {
        let (text, source) = self.text(name_or_path)?;
        Ok((parse(&text, &source)?, source))
    }

    /// `v` with `preset = "NAME"` (if it has one) resolved: `v` layered over that built-in preset.
    pub fn layered(&self, v: toml::Value, source_name: &str) -> Result<toml::Value, PlatformError> {
        let named = match v.get("preset") {
            None => None,
            Some(toml::Value::String(p)) => Some(p.as_str()),
            Some(other) => {
                return Err(PlatformError::config(
                    source_name,
                    "preset",
                    format!(
                        "{other}: the name of a built-in {} preset to start from, in quotes \
                         (known: {})",
                        self.kind,
                        self.names().join(", ")
                    ),
                ))
            }
        };
        let mut merged = match named {
            Some(p) => {
                let mut base = self.value(p).map_err(|e| match e {
                    PlatformError::Unknown { name, known, .. } => PlatformError::config(
                        source_name,
                        "preset",
                        format!("unknown {} preset '{name}' (known: {known})", self.kind),
                    ),
                    other => other,
                })?;
                merge_toml(&mut base, v.clone());
                base
            }
            None => v,
        };
        if let Some(t) = merged.as_table_mut() {
            t.remove("preset");
        }
        Ok(merged)
    }
}

/// Gives a config type of a preset family its loader: `preset(name)`, `load(name_or_path)`,
/// `from_value(value, source_name)` (with `preset = "NAME"` layering, deserialisation naming the
/// key at fault, then the type's own `validate(source_name)`) and `with_overrides(overrides,
/// source_name)`. One loader for every family: `preset_loader!(PlatformConfig, PLATFORMS)`.
#[macro_export]
macro_rules! preset_loader {
    ($ty:ty, $set:expr) => {
        $crate::preset_loader!(
            $ty,
            $set,
            merge = |_: &$ty,
                     base: &mut toml::Value,
                     over: toml::Value,
                     _: &str|
             -> Result<(), $crate::sim::error::PlatformError> {
                movelab_dram::config::merge_toml(base, over);
                Ok(())
            }
        );
    };
    // `merge`: how overrides go into the serialised config (the default adds and replaces keys;
    // a family may refuse keys its config does not have, e.g. with `merge_known`).
    ($ty:ty, $set:expr, merge = $merge:expr) => {
        impl $ty {
            /// A built-in preset by name.
            pub fn preset(name: &str) -> Result<$ty, $crate::sim::error::PlatformError> {
                Self::from_value($set.value(name)?, &$set.source(name))
            }

            /// A preset name or a TOML file path.
            pub fn load(name_or_path: &str) -> Result<$ty, $crate::sim::error::PlatformError> {
                let (v, source_name) = $set.load(name_or_path)?;
                Self::from_value(v, &source_name)
            }

            /// From a TOML value; `preset = "NAME"` layers it over a built-in preset.
            pub fn from_value(
                v: toml::Value,
                source_name: &str,
            ) -> Result<$ty, $crate::sim::error::PlatformError> {
                let cfg: $ty =
                    $crate::sim::preset::deserialize($set.layered(v, source_name)?, source_name)?;
                cfg.validate(source_name)?;
                Ok(cfg)
            }

            /// Layers overrides (a TOML table shaped like this config) on top.
            pub fn with_overrides(
                &self,
                overrides: toml::Value,
                source_name: &str,
            ) -> Result<$ty, $crate::sim::error::PlatformError> {
                let mut base = toml::Value::try_from(self).map_err(|e| {
                    $crate::sim::error::PlatformError::config(
                        source_name,
                        "(serialise)",
                        e.to_string(),
                    )
                })?;
                let before = base.clone();
                let merge = $merge;
                merge(self, &mut base, overrides, source_name)?;
                Self::from_value(base, source_name)
                    .map_err(|e| $crate::sim::preset::explain_new_table(e, &before))
            }
        }
    };
}

/// An override that names a key inside a table the config does not have (an optional section
/// the preset leaves out, e.g. `[io]` on a platform whose NIC is an agent) creates that table
/// with only the overridden keys, and the deserialisation then reports a required field missing
/// there: say instead that the section is absent and what the override would need.
pub fn explain_new_table(e: PlatformError, before: &toml::Value) -> PlatformError {
    let PlatformError::Config {
        source_name,
        key,
        what,
    } = e
    else {
        return e;
    };
    let absent = !key.starts_with('(')
        && !key.contains('[')
        && what.starts_with("missing field")
        && key.split('.').try_fold(before, |v, k| v.get(k)).is_none();
    if !absent {
        return PlatformError::Config {
            source_name,
            key,
            what,
        };
    }
    let field = what
        .split('`')
        .nth(1)
        .map(str::to_string)
        .unwrap_or_default();
    PlatformError::Config {
        what: format!(
            "this configuration has no [{key}] section, so the override would create one holding \
             only the keys given, and it lacks the required `{field}`; an override can change only \
             a section the configuration has (give the whole section, with `{key}.{field}`, to \
             add it)"
        ),
        source_name,
        key,
    }
}

pub(crate) fn parse(text: &str, source_name: &str) -> Result<toml::Value, PlatformError> {
    text.parse::<toml::Table>()
        .map(toml::Value::Table)
        .map_err(|e| PlatformError::config(source_name, "(syntax)", e.to_string()))
}

/// `v` as a `T`; an error names the key (`(top level)` when it has none).
pub fn deserialize<T: DeserializeOwned>(
    v: toml::Value,
    source_name: &str,
) -> Result<T, PlatformError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let key = e.path().to_string();
        let what = e.into_inner().message().to_string();
        PlatformError::config(
            source_name,
            if key.is_empty() || key == "." {
                "(top level)".into()
            } else {
                key
            },
            what,
        )
    })
}

/// Merges `over` into `base` (both TOML tables), refusing a key `base` lacks, except inside the
/// tables named in `open` (dotted paths such as `"configs"`), which take new entries. The error
/// names the key and the keys its table has. For configs whose tables are open maps (where the
/// deserialisation cannot refuse an unknown key); the others merge with `merge_toml` and let the
/// deserialisation name an unknown key.
pub fn merge_known(
    base: &mut toml::Value,
    over: &toml::Value,
    src: &str,
    open: &[&str],
) -> Result<(), PlatformError> {
    fn walk(
        base: &mut toml::Value,
        over: &toml::Value,
        src: &str,
        open: &[&str],
        path: &str,
    ) -> Result<(), PlatformError> {
        let (Some(b), Some(o)) = (base.as_table_mut(), over.as_table()) else {
            *base = over.clone();
            return Ok(());
        };
        let is_open = open
            .iter()
            .any(|t| path == *t || path.starts_with(&format!("{t}.")));
        for (k, v) in o {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            match b.get_mut(k) {
                Some(slot) if slot.is_table() && v.is_table() => walk(slot, v, src, open, &p)?,
                Some(slot) => *slot = v.clone(),
                None if is_open => {
                    b.insert(k.clone(), v.clone());
                }
                None => {
                    let known: Vec<&str> = b.keys().map(String::as_str).collect();
                    return Err(PlatformError::config(
                        src,
                        p,
                        format!("unknown key (known: {})", known.join(", ")),
                    ));
                }
            }
        }
        Ok(())
    }
    walk(base, over, src, open, "")
}
