//! End-to-end tests: every file is generated here, in a temporary directory.

use std::io::Write;
use std::path::{Path, PathBuf};

use pdf_extract::content::{Content, Operation};
use pdf_extract::{Document, Object, Stream, dictionary};
use zip::write::SimpleFileOptions;

use super::*;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write fixture");
    path
}

/// A PDF whose pages each show their lines in Helvetica; an empty page draws a line only.
fn pdf(pages: &[&[&str]]) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
    });
    let mut kids: Vec<Object> = Vec::new();
    for lines in pages {
        let mut operations = Vec::new();
        if lines.is_empty() {
            operations.push(Operation::new("m", vec![10.into(), 10.into()]));
            operations.push(Operation::new("l", vec![200.into(), 200.into()]));
            operations.push(Operation::new("S", vec![]));
        }
        for (i, line) in lines.iter().enumerate() {
            let y = 750 - 14 * i64::try_from(i).expect("few lines");
            operations.push(Operation::new("BT", vec![]));
            operations.push(Operation::new("Tf", vec!["F1".into(), 12.into()]));
            operations.push(Operation::new("Td", vec![72.into(), y.into()]));
            operations.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
            operations.push(Operation::new("ET", vec![]));
        }
        let content = Content { operations };
        let content_id = doc.add_object(Stream::new(
            dictionary! {},
            content.encode().expect("encode content"),
        ));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    let count = i64::try_from(kids.len()).expect("few pages");
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! {
        "Type" => "Catalog",
        "Pages" => pages_id,
    });
    doc.trailer.set("Root", catalog_id);
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).expect("save pdf");
    bytes
}

const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
</Types>"#;

const RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
</Relationships>"#;

fn document_xml(paragraphs: &[&str]) -> String {
    let body: String = paragraphs
        .iter()
        .map(|p| format!(r#"<w:p><w:r><w:t xml:space="preserve">{p}</w:t></w:r></w:p>"#))
        .collect();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}<w:sectPr/></w:body></w:document>"#
    )
}

/// A ZIP of the given parts, deflated.
fn zip_of(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in parts {
        writer.start_file(*name, options).expect("start part");
        writer.write_all(data).expect("write part");
    }
    writer.finish().expect("finish zip").into_inner()
}

fn docx(paragraphs: &[&str]) -> Vec<u8> {
    let xml = document_xml(paragraphs);
    zip_of(&[
        ("[Content_Types].xml", CONTENT_TYPES.as_bytes()),
        ("_rels/.rels", RELS.as_bytes()),
        ("word/document.xml", xml.as_bytes()),
    ])
}

fn limits() -> Limits {
    Limits::default()
}

#[test]
fn defaults() {
    assert_eq!(
        Limits::default(),
        Limits {
            max_file_bytes: 20 * 1024 * 1024,
            max_chars: 50_000
        }
    );
}

#[test]
fn every_supported_extension_has_an_extractor() {
    for (ext, media_type) in SUPPORTED {
        assert_eq!(*ext, ext.to_ascii_lowercase());
        assert!(Kind::of_media_type(media_type).is_some(), "{ext}");
    }
}

#[test]
fn plain_text_is_normalised() {
    let dir = tempfile::tempdir().expect("tempdir");
    let raw = b"\xEF\xBB\xBFfirst line\r\nsecond\rthird  \n\n\t \n";
    let path = write(dir.path(), "notes.txt", raw);
    let a = extract(&path, &limits()).expect("txt");
    assert_eq!(a.name, "notes.txt");
    assert_eq!(a.media_type, "text/plain");
    assert_eq!(a.text, "first line\nsecond\nthird");
    assert!(!a.truncated);
    assert_eq!(a.size_bytes, raw.len() as u64);
}

#[test]
fn markdown_is_kept_as_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let md = "# Title\n\n* item **bold**\n\n```rust\nfn main() {}\n```\n";
    let path = write(dir.path(), "README.markdown", md.as_bytes());
    let a = extract(&path, &limits()).expect("md");
    assert_eq!(a.media_type, "text/markdown");
    assert_eq!(a.text, md.trim_end());
}

#[test]
fn html_becomes_readable_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let html = r#"<!doctype html><html><head><title>Secret title</title>
<style>.x { color: red }</style><script>alert("no")</script></head>
<body><h2>Results &amp; notes</h2><p>Caf&eacute; &lt;open&gt; &#8364;5</p>
<script type="module">import x from "y";</script>
<ul><li>one</li><li>two</li></ul></body></html>"#;
    let path = write(dir.path(), "page.htm", html.as_bytes());
    let a = extract(&path, &limits()).expect("html");
    assert_eq!(a.media_type, "text/html");
    assert_eq!(
        a.text,
        "## Results & notes\n\nCafé <open> €5\n\n- one\n- two"
    );
    for hidden in ["Secret", "color", "alert", "import"] {
        assert!(!a.text.contains(hidden), "{hidden} in {:?}", a.text);
    }
}

#[test]
fn pdf_pages_are_extracted_and_separated_by_a_blank_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = pdf(&[
        &["Quarterly report", "Revenue grew by twelve percent"],
        &["Second page conclusion"],
    ]);
    let path = write(dir.path(), "report.pdf", &bytes);
    let a = extract(&path, &limits()).expect("pdf");
    assert_eq!(a.media_type, "application/pdf");
    assert!(!a.truncated);
    assert_eq!(
        a.text,
        "Quarterly report\nRevenue grew by twelve percent\n\nSecond page conclusion"
    );
}

/// `bytes` with page `page` redrawn in a font whose encoding pdf-extract panics on.
fn with_broken_page(bytes: &[u8], page: u32) -> Vec<u8> {
    let mut doc = Document::load_mem(bytes).expect("load");
    let font = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "NoSuchEncoding",
    });
    let content = Content {
        operations: vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F2".into(), 12.into()]),
            Operation::new("Td", vec![72.into(), 700.into()]),
            Operation::new("Tj", vec![Object::string_literal("Unreadable")]),
            Operation::new("ET", vec![]),
        ],
    };
    let content_id = doc.add_object(Stream::new(
        dictionary! {},
        content.encode().expect("encode content"),
    ));
    let page_id = doc.get_pages()[&page];
    let dict = doc
        .get_object_mut(page_id)
        .and_then(Object::as_dict_mut)
        .expect("page dictionary");
    dict.set("Contents", content_id);
    dict.set(
        "Resources",
        dictionary! { "Font" => dictionary! { "F2" => font } },
    );
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("save");
    out
}

#[test]
fn a_page_the_parser_fails_on_is_noted_and_the_rest_kept() {
    let bytes = with_broken_page(&pdf(&[&["Good page"], &["Bad page"]]), 2);
    let a = extract_bytes("mixed.pdf", &bytes, &limits()).expect("partial");
    assert!(
        a.text.starts_with(
            "Good page\n\n[mixseek: the text of page 2 could not be extracted: the PDF parser \
             failed on it (unexpected encoding"
        ),
        "{:?}",
        a.text
    );
    let bytes = with_broken_page(&pdf(&[&["Only page"]]), 1);
    match extract_bytes("bad.pdf", &bytes, &limits()) {
        Err(AttachError::CorruptPdf { reason, .. }) => {
            assert!(reason.starts_with("no page could be read"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn pdf_without_text_asks_for_ocr() {
    let e = extract_bytes("scan.pdf", &pdf(&[&[], &[]]), &limits()).expect_err("no text");
    assert!(
        matches!(e, AttachError::NoTextInPdf { pages: 2, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("scan.pdf"), "{e}");
    assert!(e.hint().contains("OCR"), "{}", e.hint());
}

#[test]
fn encrypted_pdf_is_reported() {
    use pdf_extract::{EncryptionState, EncryptionVersion, Permissions};
    let mut doc = Document::load_mem(&pdf(&[&["Top secret words"]])).expect("load");
    doc.trailer.set(
        "ID",
        Object::Array(vec![
            Object::string_literal(b"0123456789abcdef".to_vec()),
            Object::string_literal(b"0123456789abcdef".to_vec()),
        ]),
    );
    let version = EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password: "user",
        key_length: 128,
        permissions: Permissions::all(),
    };
    let state = EncryptionState::try_from(version).expect("encryption state");
    doc.encrypt(&state).expect("encrypt");
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).expect("save");
    let e = extract_bytes("locked.pdf", &bytes, &limits()).expect_err("encrypted");
    assert!(matches!(e, AttachError::EncryptedPdf { .. }), "{e:?}");
    assert!(e.to_string().contains("locked.pdf"), "{e}");
    assert!(e.hint().contains("password"), "{}", e.hint());
}

#[test]
fn corrupt_pdfs_are_errors_not_panics() {
    let real = pdf(&[&["Some words here"]]);
    let mut rng = fastrand::Rng::with_seed(7);
    let random: Vec<u8> = (0..4096).map(|_| rng.u8(..)).collect();
    for (what, bytes) in [
        ("random", random.as_slice()),
        ("truncated", &real[..real.len() / 3]),
        ("empty", &[][..]),
        ("header only", b"%PDF-1.7\n".as_slice()),
    ] {
        match extract_bytes("broken.pdf", bytes, &limits()) {
            Err(AttachError::CorruptPdf { file, reason }) => {
                assert_eq!(file, "broken.pdf");
                assert!(!reason.is_empty(), "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn docx_paragraphs_one_per_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = docx(&["First paragraph &amp; more", "Second paragraph"]);
    let path = write(dir.path(), "memo.docx", &bytes);
    let a = extract(&path, &limits()).expect("docx");
    assert_eq!(
        a.media_type,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    );
    assert_eq!(a.text, "First paragraph & more\nSecond paragraph");
}

#[test]
fn docx_main_part_is_found_through_rels() {
    let rels = RELS.replace("word/document.xml", "/word/main.xml");
    let xml = format!("\u{feff}{}", document_xml(&["Elsewhere"]));
    let bytes = zip_of(&[
        ("_rels/.rels", rels.as_bytes()),
        ("word/main.xml", xml.as_bytes()),
    ]);
    let a = extract_bytes("odd.docx", &bytes, &limits()).expect("docx");
    assert_eq!(a.text, "Elsewhere");
}

#[test]
fn corrupt_docx_files_are_errors() {
    let without_document = zip_of(&[("[Content_Types].xml", CONTENT_TYPES.as_bytes())]);
    let bad_xml = zip_of(&[("word/document.xml", b"<w:document><w:body></w:document>")]);
    let mut ole = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1".to_vec();
    ole.extend_from_slice(&[0; 512]);
    let real = docx(&["Some words"]);
    for (what, bytes, expected) in [
        (
            "no document.xml",
            without_document.as_slice(),
            "word/document.xml",
        ),
        ("not a zip", b"just some text".as_slice(), "not a ZIP"),
        ("malformed xml", bad_xml.as_slice(), "malformed XML"),
        ("ole", ole.as_slice(), "OLE compound file"),
        ("truncated", &real[..real.len() / 2], "ZIP"),
    ] {
        match extract_bytes("broken.docx", bytes, &limits()) {
            Err(e @ AttachError::CorruptDocx { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("broken.docx"), "{what}: {msg}");
                assert!(msg.contains(expected), "{what}: {msg}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn docx_decompression_is_capped() {
    let xml = document_xml(&[&"a".repeat(10_000)]);
    let bytes = zip_of(&[("word/document.xml", xml.as_bytes())]);
    let e = docx::to_text_capped("bomb.docx", &bytes, 1024).expect_err("capped");
    assert!(
        matches!(&e, AttachError::DecompressedTooLarge { part, limit: 1024, .. } if part == "word/document.xml"),
        "{e:?}"
    );
    assert!(e.to_string().contains("bomb.docx"), "{e}");
}

#[test]
fn unsupported_types_list_the_supported_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, ext) in [("data.xyz", Some("xyz")), ("Makefile", None)] {
        let path = write(dir.path(), name, b"x");
        let e = extract(&path, &limits()).expect_err("unsupported");
        assert!(
            matches!(&e, AttachError::Unsupported { extension, .. } if extension.as_deref() == ext),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(msg.contains(name), "{msg}");
        assert!(msg.contains(".txt, .text, .md"), "{msg}");
        assert!(msg.contains(".docx"), "{msg}");
        assert!(e.hint().contains(".txt"), "{}", e.hint());
    }
    let e = extract_bytes("table.csv", b"a,b", &limits()).expect_err("csv");
    assert!(
        e.hint().contains("copy it to a file ending in .txt"),
        "{}",
        e.hint()
    );
}

#[test]
fn missing_file_and_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.txt");
    let e = extract(&missing, &limits()).expect_err("missing");
    assert!(matches!(e, AttachError::NotFound { .. }), "{e:?}");
    assert!(
        e.to_string().contains(&missing.display().to_string()),
        "{e}"
    );

    let sub = dir.path().join("folder.txt");
    std::fs::create_dir(&sub).expect("mkdir");
    let e = extract(&sub, &limits()).expect_err("directory");
    assert!(matches!(e, AttachError::Directory { .. }), "{e:?}");
    assert!(e.to_string().contains("folder.txt"), "{e}");
}

#[test]
fn too_large_files_are_refused_before_reading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "big.txt", &[b'a'; 2048]);
    let small = Limits {
        max_file_bytes: 1024,
        ..Limits::default()
    };
    let e = extract(&path, &small).expect_err("too large");
    assert!(
        matches!(
            e,
            AttachError::TooLarge {
                size: 2048,
                limit: 1024,
                ..
            }
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("big.txt") && msg.contains("2 KiB") && msg.contains("1 KiB"),
        "{msg}"
    );
    assert!(extract_bytes("big.txt", &[b'a'; 2048], &small).is_err());
    assert!(extract_bytes("ok.txt", &[b'a'; 1024], &small).is_ok());
}

#[test]
fn non_utf8_text_says_to_convert() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "latin1.txt", b"caf\xE9 au lait");
    let e = extract(&path, &limits()).expect_err("latin-1");
    assert!(matches!(e, AttachError::NotUtf8 { .. }), "{e:?}");
    assert!(e.to_string().contains("latin1.txt"), "{e}");
    assert!(e.hint().contains("UTF-8"), "{}", e.hint());
    let e = extract_bytes("page.html", b"<p>\xFF\xFE</p>", &limits()).expect_err("html");
    assert!(matches!(e, AttachError::NotUtf8 { .. }), "{e:?}");
}

#[test]
fn long_text_is_truncated_with_a_note() {
    let text = "é".repeat(30) + "\n" + &"z".repeat(69);
    let a = extract_bytes(
        "dir/long.md",
        text.as_bytes(),
        &Limits {
            max_chars: 40,
            ..Limits::default()
        },
    )
    .expect("md");
    assert!(a.truncated);
    assert_eq!(a.name, "long.md");
    assert_eq!(
        a.text,
        format!(
            "{}\n{}\n[… truncated by mixseek: kept the first 40 of 100 characters of long.md]",
            "é".repeat(30),
            "z".repeat(9)
        )
    );
    let exact = extract_bytes(
        "exact.txt",
        "abc".as_bytes(),
        &Limits {
            max_chars: 3,
            ..Limits::default()
        },
    )
    .expect("txt");
    assert!(!exact.truncated);
    assert_eq!(exact.text, "abc");
}

#[test]
fn sha256_and_size_describe_the_raw_bytes() {
    let a = extract_bytes("abc.txt", b"abc\r\n", &limits()).expect("txt");
    assert_eq!(a.text, "abc");
    assert_eq!(a.size_bytes, 5);
    let b = extract_bytes("abc.txt", b"abc", &limits()).expect("txt");
    assert_eq!(
        b.sha256,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_ne!(a.sha256, b.sha256);
    let pdf_bytes = pdf(&[&["hash me"]]);
    let p = extract_bytes("h.pdf", &pdf_bytes, &limits()).expect("pdf");
    assert_eq!(p.size_bytes, pdf_bytes.len() as u64);
    assert_eq!(p.sha256.len(), 64);
    assert!(
        p.sha256
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
}

#[test]
fn extensions_are_case_insensitive() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "NOTES.TXT", b"upper");
    let a = extract(&path, &limits()).expect("TXT");
    assert_eq!(
        (a.name.as_str(), a.media_type.as_str()),
        ("NOTES.TXT", "text/plain")
    );
    let a = extract_bytes("Report.Pdf", &pdf(&[&["Mixed case"]]), &limits()).expect("Pdf");
    assert_eq!(a.media_type, "application/pdf");
    assert!(a.text.contains("Mixed case"), "{:?}", a.text);
    let a = extract_bytes("MEMO.DOCX", &docx(&["Shouting"]), &limits()).expect("DOCX");
    assert_eq!(a.text, "Shouting");
}

/// Random and mutated bytes never panic, whatever they are called.
#[test]
fn mutated_pdf_and_docx_never_panic() {
    let seeds = [
        ("f.pdf", pdf(&[&["Alpha beta gamma"], &["Delta epsilon"]])),
        ("f.docx", docx(&["Alpha beta", "Gamma delta"])),
    ];
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let mut runs = 0;
    for round in 0..500 {
        for (name, seed) in &seeds {
            let mut bytes = seed.clone();
            match round % 4 {
                // Flip a few bytes.
                0 | 1 => {
                    for _ in 0..rng.usize(1..8) {
                        let i = rng.usize(..bytes.len());
                        bytes[i] = rng.u8(..);
                    }
                }
                // Cut it short.
                2 => bytes.truncate(rng.usize(..bytes.len())),
                // Pure noise, sometimes with the right magic.
                _ => {
                    bytes = (0..rng.usize(..2048)).map(|_| rng.u8(..)).collect();
                    if rng.bool() {
                        let magic: &[u8] = if name.ends_with("pdf") {
                            b"%PDF-1.4\n"
                        } else {
                            b"PK\x03\x04"
                        };
                        bytes.splice(0..0, magic.iter().copied());
                    }
                }
            }
            // Ok or Err are both fine; a panic fails the test.
            let _ = extract_bytes(name, &bytes, &limits());
            runs += 1;
        }
    }
    assert_eq!(runs, 1000);
}
