"""The repository carries its own documentation: no text file points outside it, and every relative
Markdown link in the README, RESULTS.md and docs/ lands on a file (and heading) of the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
# Team-internal material that a clone of the repository does not have.
OUTSIDE = ("../shared", "/work/" + "shared")
TEXT_SUFFIXES = {".md", ".py", ".txt", ".toml", ".yaml", ".yml", ".json", ".csv", ".cfg", ".ini", ".html", ""}


def project_files() -> list[str]:
    """The project's files as git knows them (tracked and untracked, not ignored); the tree when git is absent."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        listed = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()]
    return sorted({p for p in listed if (ROOT / p).is_file()})


def text_files() -> list[str]:
    """README.md, RESULTS.md and the text files under docs/, src/, bench/ and tests/ (except this test)."""
    chosen = []
    for path in project_files():
        top = path.split("/", 1)[0]
        wanted = path in ("README.md", "RESULTS.md") or (top in ("docs", "src", "bench", "tests") and path != THIS)
        if wanted and Path(path).suffix in TEXT_SUFFIXES and ".egg-info/" not in path:
            chosen.append(path)
    return chosen


def test_no_project_file_points_to_the_team_material_outside_the_repository() -> None:
    offenders = []
    for path in text_files():
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(marker in line for marker in OUTSIDE):
                offenders.append(f"{path}:{number}: {line.strip()}")
    assert not offenders, "files that point outside the repository:\n" + "\n".join(offenders)


# --------------------------------------------------------------------------------------------- Markdown links

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
FENCE = re.compile(r"^([ \t]*)(```|~~~).*?^\1\2[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)
EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)


def without_code(markdown: str) -> str:
    """The text with fenced code blocks and inline code spans removed (links there are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", markdown))


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every anchor a Markdown file offers: its headings' slugs (duplicates numbered as GitHub does)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in HEADING.finditer(FENCE.sub("", markdown)):
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    found.update(EXPLICIT_ANCHOR.findall(markdown))
    return found


def linked_documents() -> list[str]:
    docs = [p for p in project_files() if p.startswith("docs/") and p.endswith(".md")]
    return ["README.md", "RESULTS.md", *docs]


def relative_links(markdown: str) -> list[str]:
    text = without_code(markdown)
    targets = LINK.findall(text) + IMAGE.findall(text) + REFERENCE.findall(text)
    return [t for t in targets if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t)]  # http:, mailto:, ...


def test_the_docs_folder_has_an_index_and_its_pages() -> None:
    for page in ("README.md", "prediction.md", "cnnergy.md", "design.md", "formats.md"):
        assert (ROOT / "docs" / page).is_file(), f"docs/{page} is missing"


@pytest.mark.parametrize("document", linked_documents())
def test_every_relative_link_resolves(document: str) -> None:
    source = ROOT / document
    broken = []
    for target in relative_links(source.read_text(encoding="utf-8")):
        path_part, _, anchor = target.partition("#")
        file = (source.parent / unquote(path_part)).resolve() if path_part else source
        if ROOT not in file.parents and file != ROOT:
            broken.append(f"{target}: outside the repository")
            continue
        if not file.exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor and file.suffix == ".md" and unquote(anchor) not in anchors(file.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT).as_posix()}")
    assert not broken, f"{document} has broken links:\n" + "\n".join(broken)


def test_the_slug_rule() -> None:
    assert github_slug("Step models and the width advisor (Osterwind et al.)") == \
        "step-models-and-the-width-advisor-osterwind-et-al"
    assert github_slug("The `predict --json` document") == "the-predict---json-document"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}
    assert anchors("x\n\n```json\n{}\n```\n\n## B\n\n```\ny\n```\n") == {"b"}
