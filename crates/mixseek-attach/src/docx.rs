//! DOCX: the paragraphs of the main document part (`word/document.xml`), one per line, tabs
//! and line breaks kept, a table row's cells separated by tabs.
//!
//! A DOCX is a ZIP archive: each part is read through a cap of [`MAX_DECOMPRESSED_BYTES`],
//! so a zip bomb is an error, not an exhausted memory.

use std::io::{Cursor, Read};

use quick_xml::NsReader;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;

use crate::{AttachError, MAX_DECOMPRESSED_BYTES};

/// WordprocessingML, transitional and strict.
const W_NAMESPACES: &[&str] = &[
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",
];
/// Markup compatibility: `mc:Fallback` repeats what `mc:Choice` says (text boxes).
const MC_NAMESPACE: &str = "http://schemas.openxmlformats.org/markup-compatibility/2006";
/// The main part's usual name; `_rels/.rels` names it when it is elsewhere.
const MAIN_PART: &str = "word/document.xml";
/// The magic number of an OLE compound file: an encrypted Office file or a legacy `.doc`.
const OLE_MAGIC: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

/// The text of the DOCX in `bytes`.
pub(crate) fn to_text(file: &str, bytes: &[u8]) -> Result<String, AttachError> {
    to_text_capped(file, bytes, MAX_DECOMPRESSED_BYTES)
}

/// [`to_text`] with each part's decompressed size capped at `cap` bytes.
pub(crate) fn to_text_capped(file: &str, bytes: &[u8], cap: u64) -> Result<String, AttachError> {
    let corrupt = |reason: String| AttachError::CorruptDocx {
        file: file.to_string(),
        reason,
    };
    if bytes.starts_with(OLE_MAGIC) {
        return Err(corrupt(
            "it is an OLE compound file, not a ZIP: a password-protected Word document or an \
             old .doc renamed to .docx"
                .to_string(),
        ));
    }
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| corrupt(format!("it is not a ZIP archive ({e})")))?;
    let (part_name, part) = match read_part(file, &mut archive, MAIN_PART, cap)? {
        Some(xml) => (MAIN_PART.to_string(), xml),
        None => {
            let target = main_part_from_rels(file, &mut archive, cap)?.ok_or_else(|| {
                corrupt(format!(
                    "it has no {MAIN_PART} (a ZIP archive, but not a Word document)"
                ))
            })?;
            let xml = read_part(file, &mut archive, &target, cap)?
                .ok_or_else(|| corrupt(format!("its main document part {target} is missing")))?;
            (target, xml)
        }
    };
    let xml = std::str::from_utf8(&part)
        .map_err(|e| corrupt(format!("{part_name} is not UTF-8 XML ({e})")))?;
    document_text(xml.strip_prefix('\u{feff}').unwrap_or(xml))
        .map_err(|e| corrupt(format!("{part_name}: {e}")))
}

/// One part of the archive, at most `cap` bytes of it; `None` if absent.
fn read_part(
    file: &str,
    archive: &mut zip::ZipArchive<Cursor<&[u8]>>,
    name: &str,
    cap: u64,
) -> Result<Option<Vec<u8>>, AttachError> {
    let too_large = || AttachError::DecompressedTooLarge {
        file: file.to_string(),
        part: name.to_string(),
        limit: cap,
    };
    let entry = match archive.by_name(name) {
        Ok(entry) => entry,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => {
            return Err(AttachError::CorruptDocx {
                file: file.to_string(),
                reason: format!("{name} cannot be opened ({e})"),
            });
        }
    };
    if entry.size() > cap {
        return Err(too_large());
    }
    let mut data = Vec::new();
    entry
        .take(cap.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|e| AttachError::CorruptDocx {
            file: file.to_string(),
            reason: format!("{name} cannot be decompressed ({e})"),
        })?;
    if data.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(Some(data))
}

/// The main document part named by `_rels/.rels` (relationship type `…/officeDocument`).
fn main_part_from_rels(
    file: &str,
    archive: &mut zip::ZipArchive<Cursor<&[u8]>>,
    cap: u64,
) -> Result<Option<String>, AttachError> {
    let Some(rels) = read_part(file, archive, "_rels/.rels", cap)? else {
        return Ok(None);
    };
    let Ok(rels) = std::str::from_utf8(&rels) else {
        return Ok(None);
    };
    let mut reader = quick_xml::Reader::from_str(rels);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) if e.local_name().as_ref() == "Relationship" => {
                let attr = |key: &str| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == key)
                        .map(|a| a.value.into_owned())
                };
                if attr("Type").is_some_and(|t| t.ends_with("/officeDocument")) {
                    return Ok(attr("Target").map(|t| t.trim_start_matches('/').to_string()));
                }
            }
            Ok(Event::Eof) | Err(_) => return Ok(None),
            Ok(_) => {}
        }
    }
}

/// Text gathered while walking the XML.
#[derive(Default)]
struct Walk {
    out: String,
    /// Open paragraphs (a text box's paragraphs sit inside another paragraph).
    paragraphs: Vec<String>,
    /// Depth of `w:tc`; the outermost cell collects into `cell`.
    cell_depth: usize,
    cell: String,
    row: Vec<String>,
    run_depth: usize,
    in_text: bool,
    fallback_depth: usize,
}

impl Walk {
    fn push(&mut self, s: &str) {
        if self.fallback_depth > 0 {
            return;
        }
        if let Some(p) = self.paragraphs.last_mut() {
            p.push_str(s);
        }
    }

    fn end_paragraph(&mut self) {
        let Some(p) = self.paragraphs.pop() else {
            return;
        };
        if self.fallback_depth > 0 {
            return;
        }
        if self.cell_depth > 0 {
            if !self.cell.is_empty() && !p.is_empty() {
                self.cell.push(' ');
            }
            self.cell.push_str(&p);
        } else {
            self.out.push_str(&p);
            self.out.push('\n');
        }
    }

    fn end_cell(&mut self) {
        self.cell_depth = self.cell_depth.saturating_sub(1);
        if self.cell_depth == 0 {
            self.row
                .push(std::mem::take(&mut self.cell).trim().to_string());
        } else if !self.cell.is_empty() {
            self.cell.push(' ');
        }
    }

    fn end_row(&mut self) {
        if self.cell_depth > 0 {
            // A row of a table nested in a cell.
            return;
        }
        let row = std::mem::take(&mut self.row);
        if self.fallback_depth == 0 && !row.is_empty() {
            self.out.push_str(row.join("\t").trim_end());
            self.out.push('\n');
        }
    }
}

/// The text of a WordprocessingML document.
fn document_text(xml: &str) -> Result<String, String> {
    let mut reader = NsReader::from_str(xml);
    let mut walk = Walk::default();
    loop {
        let (ns, event) = match reader.read_resolved_event() {
            Ok(resolved) => resolved,
            Err(e) => {
                let at = reader.error_position();
                return Err(format!("malformed XML at byte {at} ({e})"));
            }
        };
        let ns: Option<&str> = match ns {
            ResolveResult::Bound(ns) => Some(ns.into_inner()),
            _ => None,
        };
        let is_w = ns.is_some_and(|ns| W_NAMESPACES.contains(&ns));
        let is_mc = ns == Some(MC_NAMESPACE);
        match event {
            Event::Start(e) => {
                let name = e.local_name();
                match (is_w, is_mc, name.as_ref()) {
                    (true, _, "p") => walk.paragraphs.push(String::new()),
                    (true, _, "r") => walk.run_depth += 1,
                    (true, _, "t") => walk.in_text = true,
                    (true, _, "tc") => walk.cell_depth += 1,
                    (true, _, "tab" | "ptab" | "br" | "cr" | "noBreakHyphen") => {
                        empty_element(&mut walk, name.as_ref());
                    }
                    (_, true, "Fallback") => walk.fallback_depth += 1,
                    _ => {}
                }
            }
            Event::Empty(e) => {
                let name = e.local_name();
                match (is_w, name.as_ref()) {
                    (true, "p") => {
                        walk.paragraphs.push(String::new());
                        walk.end_paragraph();
                    }
                    (true, other) => empty_element(&mut walk, other),
                    _ => {}
                }
            }
            Event::End(e) => {
                let name = e.local_name();
                match (is_w, is_mc, name.as_ref()) {
                    (true, _, "p") => walk.end_paragraph(),
                    (true, _, "r") => walk.run_depth = walk.run_depth.saturating_sub(1),
                    (true, _, "t") => walk.in_text = false,
                    (true, _, "tc") => walk.end_cell(),
                    (true, _, "tr") => walk.end_row(),
                    (_, true, "Fallback") => {
                        walk.fallback_depth = walk.fallback_depth.saturating_sub(1);
                    }
                    _ => {}
                }
            }
            Event::Text(t) if walk.in_text => walk.push(&t.xml10_content()),
            Event::CData(t) if walk.in_text => {
                walk.push(&t.into_inner());
            }
            Event::GeneralRef(r) if walk.in_text => {
                let text = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => quick_xml::escape::resolve_xml_entity(&r)
                        .map_or_else(|| format!("&{};", &*r), str::to_string),
                };
                walk.push(&text);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    // Paragraphs left open by a truncated document still count.
    while !walk.paragraphs.is_empty() {
        walk.end_paragraph();
    }
    Ok(walk.out)
}

/// A self-closing WordprocessingML element inside a run: tabs, breaks, hyphens.
fn empty_element(walk: &mut Walk, name: &str) {
    if walk.run_depth == 0 {
        // `w:tab` also defines tab stops in paragraph properties.
        return;
    }
    match name {
        "tab" | "ptab" => walk.push("\t"),
        "br" | "cr" => walk.push("\n"),
        "noBreakHyphen" => walk.push("-"),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(body: &str) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"
 xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><w:body>{body}</w:body></w:document>"#
        )
    }

    #[test]
    fn paragraphs_tabs_breaks_and_entities() {
        let xml = doc(
            r#"<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>
<w:r><w:t>Fish</w:t></w:r><w:r><w:tab/><w:t xml:space="preserve"> &amp; chips</w:t></w:r></w:p>
<w:p><w:r><w:t>line one</w:t><w:br/><w:t>line two &#x2713;</w:t></w:r></w:p>
<w:p/>
<w:p><w:r><w:delText>deleted</w:delText><w:t>kept</w:t></w:r></w:p>"#,
        );
        assert_eq!(
            document_text(&xml).expect("text"),
            "Fish\t & chips\nline one\nline two ✓\n\nkept\n"
        );
    }

    #[test]
    fn table_cells_are_separated_by_tabs() {
        let xml = doc(
            r#"<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Name</w:t></w:r></w:p></w:tc>
<w:tc><w:p><w:r><w:t>Score</w:t></w:r></w:p><w:p><w:r><w:t>(max 10)</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>7</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
<w:p><w:r><w:t>after</w:t></w:r></w:p>"#,
        );
        assert_eq!(
            document_text(&xml).expect("text"),
            "Name\tScore (max 10)\na\t7\nafter\n"
        );
    }

    #[test]
    fn fallback_content_is_not_repeated() {
        let xml = doc(
            r#"<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:txbxContent>
<w:p><w:r><w:t>boxed</w:t></w:r></w:p></w:txbxContent></mc:Choice>
<mc:Fallback><w:txbxContent><w:p><w:r><w:t>boxed</w:t></w:r></w:p></w:txbxContent></mc:Fallback>
</mc:AlternateContent></w:r><w:r><w:t>outer</w:t></w:r></w:p>"#,
        );
        assert_eq!(document_text(&xml).expect("text"), "boxed\nouter\n");
    }

    #[test]
    fn malformed_xml_is_an_error() {
        let e = document_text(&doc("<w:p><w:r><w:t>a</w:r></w:p>")).expect_err("mismatch");
        assert!(e.contains("malformed XML"), "{e}");
    }
}
