from pathlib import Path

import pytest

from storage.kb.documents import DocumentError, discover, read_beir_corpus, read_file


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def one(path: Path, root: Path):
    return next(iter(read_file(path, root)))


def test_markdown_front_matter_is_read(tmp_path):
    path = write(
        tmp_path / "billing" / "refunds.md",
        "---\ntitle: Refunds\ntiers: enterprise\naccess: customer\nowner: finance\n---\n"
        "# Refunds\nMoney back in 5 days.\n",
    )
    doc = one(path, tmp_path)
    assert doc.source_id == "billing/refunds.md"
    assert doc.title == "Refunds"
    assert doc.metadata["tiers"] == ["enterprise"]
    assert doc.metadata["access"] == "customer"
    assert doc.metadata["owner"] == "finance"
    assert doc.origin == str(path.resolve())


def test_front_matter_id_wins_and_access_defaults_to_public(tmp_path):
    doc = one(write(tmp_path / "a.md", "---\nid: kb-42\n---\nHello there.\n"), tmp_path)
    assert doc.source_id == "kb-42"
    assert doc.metadata["access"] == "public"
    assert doc.title == "a"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("---\naccess: admin\n---\nText.\n", "bad front matter: access"),
        ("---\ntiers: {a: 1}\n---\nText.\n", "bad front matter: tiers"),
        ("---\ntitle: [unclosed\n---\nText.\n", "not valid YAML"),
        ("---\ntitle: Empty\n---\n   \n", "empty document"),
    ],
)
def test_bad_markdown_is_refused_with_the_reason(tmp_path, content, expected):
    with pytest.raises(DocumentError, match=expected):
        one(write(tmp_path / "bad.md", content), tmp_path)


def test_non_utf8_and_unsupported_files_are_refused(tmp_path):
    with pytest.raises(DocumentError, match="not UTF-8"):
        one(write(tmp_path / "latin.txt", "caf\xe9".encode("latin-1")), tmp_path)
    with pytest.raises(DocumentError, match=r"unsupported file type \.docx"):
        one(write(tmp_path / "x.docx", "x"), tmp_path)


def test_html_text_is_extracted_without_scripts(tmp_path):
    html = (
        "<html><head><title>Start</title><meta name='access' content='customer'>"
        "<script>alert(1)</script></head><body><nav>menu</nav><h1>Start</h1>"
        "<p>Install the <b>desktop</b> app.</p></body></html>"
    )
    doc = one(write(tmp_path / "start.html", html), tmp_path)
    assert doc.title == "Start"
    assert "desktop" in doc.text and "alert" not in doc.text and "menu" not in doc.text
    assert doc.metadata["access"] == "customer"


def _minimal_pdf(text: str) -> bytes:
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def test_pdf_text_is_extracted_and_broken_pdf_refused(tmp_path):
    doc = one(write(tmp_path / "guide.pdf", _minimal_pdf("Refunds take five days")), tmp_path)
    assert "Refunds take five days" in doc.text
    with pytest.raises(DocumentError, match="PDF"):
        one(write(tmp_path / "broken.pdf", b"%PDF-1.4 not really"), tmp_path)


def test_beir_corpus_rows_become_documents_and_bad_rows_are_named(tmp_path):
    path = write(
        tmp_path / "corpus.jsonl",
        '{"_id": "d1", "title": "T1", "text": "Body one."}\n\n'
        '{"_id": "d2", "title": "", "text": "Body two."}\n',
    )
    docs = list(read_beir_corpus(path))
    assert [(d.source_id, d.title) for d in docs] == [("d1", "T1"), ("d2", "")]
    write(path, '{"_id": "d1", "text": "x"}\n{"title": "no id"}\n')
    with pytest.raises(DocumentError, match=r"corpus.jsonl:2"):
        list(read_beir_corpus(path))


def test_discover_walks_folders_for_supported_files(tmp_path):
    write(tmp_path / "kb" / "a.md", "A.")
    write(tmp_path / "kb" / "sub" / "b.txt", "B.")
    write(tmp_path / "kb" / "image.png", b"\x89PNG")
    found = discover([tmp_path / "kb"])
    assert [f.name for f, _ in found] == ["a.md", "b.txt"]
    assert all(root == tmp_path / "kb" for _, root in found)


def test_an_empty_tier_list_is_refused_naming_the_file(tmp_path):
    path = write(tmp_path / "sso" / "setup.md", "---\ntiers: []\n---\nSSO steps.\n")
    with pytest.raises(DocumentError, match=r"setup\.md: bad front matter: tiers: .*every tier"):
        one(path, tmp_path)


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(document.cookie)",
        " JavaScript:alert(1)",
        "data:text/html,<script>x</script>",
        "vbscript:msgbox",
        "//evil.example/link",
        "/\\\\evil.example/link",
        "ftp://files.example.com/a",
    ],
)
def test_only_http_links_and_paths_are_kept_and_the_rest_reported(tmp_path, url):
    path = write(tmp_path / "a.md", f"---\nurl: '{url}'\n---\nHello there.\n")
    doc = one(path, tmp_path)
    assert doc.url is None
    assert len(doc.warnings) == 1 and "only http(s) links are kept" in doc.warnings[0]
    assert str(path.resolve()) in doc.warnings[0]


def test_a_path_is_kept_as_a_link_on_the_service(tmp_path):
    """A desk article published without ``pilot.public_url`` links to its path on the
    service (the web chat and the widget open it there)."""
    path = write(tmp_path / "a.md", "---\nurl: /help/articles/acme/mars\n---\nHello there.\n")
    doc = one(path, tmp_path)
    assert doc.url == "/help/articles/acme/mars" and doc.warnings == []


@pytest.mark.parametrize("url", ["https://help.example.com/a", "HTTP://help.example.com/b"])
def test_http_links_are_kept(tmp_path, url):
    doc = one(write(tmp_path / "a.md", f"---\nurl: {url}\n---\nHello there.\n"), tmp_path)
    assert doc.url == url and doc.warnings == []
