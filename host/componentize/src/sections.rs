//! Editing a core module's sections in place: entries appended, so no
//! index in the module moves.

use crate::ComponentizeError;

pub(crate) fn leb_u32(mut value: u32, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Splits a vector section's content into its count and its entries.
pub(crate) fn count_and_entries(content: &[u8]) -> Result<(u32, &[u8]), ComponentizeError> {
    let mut reader = wasmparser::BinaryReader::new(content, 0);
    let count = reader.read_var_u32()?;
    let at = usize::try_from(reader.original_position())?;
    Ok((count, content.get(at..).unwrap_or_default()))
}

/// A section with `added` appended to its entries.
pub(crate) fn extend_section(
    out: &mut Vec<u8>,
    id: u8,
    content: &[u8],
    added: &[u8],
) -> Result<(), ComponentizeError> {
    let (count, entries) = count_and_entries(content)?;
    let mut body = Vec::new();
    leb_u32(count + 1, &mut body);
    body.extend_from_slice(entries);
    body.extend_from_slice(added);
    out.push(id);
    leb_u32(u32::try_from(body.len())?, out);
    out.extend_from_slice(&body);
    Ok(())
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
