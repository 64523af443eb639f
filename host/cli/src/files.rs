//! Reading manifests from files, directories and standard input.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Reads a file, or standard input for `-`.
pub fn read_text(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read standard input")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Every YAML document in a file, or in the `.yaml`/`.yml`/`.json` files of a
/// directory (sorted by name), with the file each came from.
pub fn read_documents(path: &Path) -> Result<Vec<(PathBuf, Value)>> {
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read directory {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_file()
                    && matches!(
                        p.extension().and_then(|e| e.to_str()),
                        Some("yaml" | "yml" | "json")
                    )
            })
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut documents = Vec::new();
    for file in files {
        let text = read_text(&file)?;
        let values = plait_model::parse_documents(&text, &file.display().to_string())?;
        documents.extend(values.into_iter().map(|v| (file.clone(), v)));
    }
    Ok(documents)
}

/// Every YAML document under a path: a file, standard input for `-`, or
/// the `.yaml`/`.yml`/`.json` files of a directory and its subdirectories
/// (sorted by path).
pub fn read_documents_recursive(path: &Path) -> Result<Vec<(PathBuf, Value)>> {
    if !path.is_dir() {
        return read_documents(path);
    }
    let mut files = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)
            .with_context(|| format!("cannot read directory {}", dir.display()))?
        {
            let entry_path = entry
                .with_context(|| format!("cannot read directory {}", dir.display()))?
                .path();
            if entry_path.is_dir() {
                pending.push(entry_path);
            } else if matches!(
                entry_path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            ) {
                files.push(entry_path);
            }
        }
    }
    files.sort();
    let mut documents = Vec::new();
    for file in files {
        documents.extend(read_documents(&file)?);
    }
    Ok(documents)
}

/// Exactly one document from a file.
pub fn read_one(path: &Path, what: &str) -> Result<Value> {
    let mut documents = read_documents(path)?;
    match documents.len() {
        1 => Ok(documents.remove(0).1),
        0 => bail!("{}: no {what} found", path.display()),
        n => bail!(
            "{}: expected one {what}, found {n} documents",
            path.display()
        ),
    }
}

/// Serialises values as a YAML stream, each document preceded by `---`.
pub fn to_yaml_stream(values: &[Value]) -> Result<String> {
    let mut out = String::new();
    for value in values {
        out.push_str("---\n");
        out.push_str(&to_yaml(value)?);
    }
    Ok(out)
}

/// `value` as YAML, written as Go's `sigs.k8s.io/yaml` writes it (what
/// `crossplane` and `kubectl` print): every string a YAML 1.1 reader would
/// take for something else (`yes`, `off`, `~`, `1:20`, `0x1F`, a date) is
/// quoted, since kubectl and Go's readers are YAML 1.1 readers. Every YAML
/// plait prints goes through here.
pub fn to_yaml(value: &Value) -> Result<String> {
    String::from_utf8(plait_model::composition_hash::to_go_yaml(value))
        .context("cannot write YAML: the emitter wrote invalid UTF-8")
}

/// A serialisable value (a report, a tree) as [`to_yaml`] writes it.
pub fn serialize_to_yaml(value: &impl serde::Serialize) -> Result<String> {
    to_yaml(&serde_json::to_value(value).context("cannot write YAML")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings a YAML 1.1 reader (kubectl, Go's `sigs.k8s.io/yaml`) would
    /// read as booleans, nulls, numbers or dates, and some that it reads as
    /// strings, beside what `sigs.k8s.io/yaml` v1.6.0's `Marshal` writes for
    /// `{"k": s}` (recorded from Go).
    const GO_WRITES: &[(&str, &str)] = &[
        ("yes", "k: \"yes\"\n"),
        ("Yes", "k: \"Yes\"\n"),
        ("YES", "k: \"YES\"\n"),
        ("no", "k: \"no\"\n"),
        ("No", "k: \"No\"\n"),
        ("NO", "k: \"NO\"\n"),
        ("y", "k: \"y\"\n"),
        ("Y", "k: \"Y\"\n"),
        ("n", "k: \"n\"\n"),
        ("N", "k: \"N\"\n"),
        ("on", "k: \"on\"\n"),
        ("On", "k: \"On\"\n"),
        ("ON", "k: \"ON\"\n"),
        ("off", "k: \"off\"\n"),
        ("Off", "k: \"Off\"\n"),
        ("OFF", "k: \"OFF\"\n"),
        ("true", "k: \"true\"\n"),
        ("False", "k: \"False\"\n"),
        ("~", "k: \"~\"\n"),
        ("null", "k: \"null\"\n"),
        ("", "k: \"\"\n"),
        ("1:20", "k: \"1:20\"\n"),
        ("190:20:30", "k: \"190:20:30\"\n"),
        ("0x1F", "k: \"0x1F\"\n"),
        ("0o17", "k: \"0o17\"\n"),
        ("0b1010", "k: \"0b1010\"\n"),
        ("012", "k: \"012\"\n"),
        ("1e3", "k: \"1e3\"\n"),
        ("1_000", "k: \"1_000\"\n"),
        (".inf", "k: \".inf\"\n"),
        ("-.Inf", "k: \"-.Inf\"\n"),
        (".NaN", "k: \".NaN\"\n"),
        ("2001-12-14", "k: \"2001-12-14\"\n"),
        (
            "2001-12-14t21:59:43.10-05:00",
            "k: \"2001-12-14t21:59:43.10-05:00\"\n",
        ),
        ("3.14", "k: \"3.14\"\n"),
        ("-7", "k: \"-7\"\n"),
        ("+12", "k: \"+12\"\n"),
        ("plain", "k: plain\n"),
        ("yes please", "k: yes please\n"),
        ("on-call", "k: on-call\n"),
        ("y2k", "k: y2k\n"),
        ("x:y", "k: x:y\n"),
        ("- item", "k: '- item'\n"),
        ("#comment", "k: '#comment'\n"),
        ("a: b", "k: 'a: b'\n"),
        ("'quoted'", "k: '''quoted'''\n"),
        ("<<", "k: <<\n"),
        ("=", "k: =\n"),
        ("multi\nline", "k: |-\n  multi\n  line\n"),
        (" leading", "k: ' leading'\n"),
        ("trailing ", "k: 'trailing '\n"),
        ("@at", "k: '@at'\n"),
        ("`tick", "k: '`tick'\n"),
        ("%pct", "k: '%pct'\n"),
        ("!bang", "k: '!bang'\n"),
        ("&amp", "k: '&amp'\n"),
        ("*star", "k: '*star'\n"),
        ("|pipe", "k: '|pipe'\n"),
        (">gt", "k: '>gt'\n"),
        ("[x]", "k: '[x]'\n"),
        ("{x}", "k: '{x}'\n"),
        ("?", "k: '?'\n"),
        ("-", "k: '-'\n"),
        (":", "k: ':'\n"),
    ];

    #[test]
    fn strings_a_yaml_1_1_reader_would_misread_are_quoted_as_go_quotes_them() {
        for (string, go) in GO_WRITES {
            let written = to_yaml(&serde_json::json!({"k": string})).unwrap_or_default();
            assert_eq!(&written, go, "{string:?}");
            let read: Value = serde_yaml_ng::from_str(&written).unwrap_or_default();
            assert_eq!(read["k"], *string, "{written:?} reads back as the string");
        }
    }
}
