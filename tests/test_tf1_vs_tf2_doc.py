"""docs/tf1-vs-tf2.md: every citation of it names a section it has, no file points outside the
project, and the facts it states hold on the installed TensorFlow.

The first tests are fast (they read the tracked files). The two ``test_measured_*`` tests at
the end are slow (about 30 s on 2 shared cores): they run sections 2 and 8 of
benchmarks/tf1_vs_tf2.py, four fresh TensorFlow processes, and check what they measured.
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "tf1-vs-tf2.md"
SCRIPT = ROOT / "benchmarks" / "tf1_vs_tf2.py"

#: "docs/tf1-vs-tf2.md, section 8", also wrapped over lines or naming several sections
CITATION = re.compile(r"tf1-vs-tf2\.md,?\s+sections?\s+(\d+(?:\s*(?:,|and|-)\s*\d+)*)")
HEADING = re.compile(r"^## (\d+)\. \S", re.MULTILINE)
#: spelled in pieces so that this file does not match itself
OUTSIDE = [re.compile(p, re.IGNORECASE) for p in
           (r"GAPS" + r"\.md", r"\.\./" + "shared", r"/work/" + "shared")]


def tracked_texts():
    """(path, text) of every tracked file present in the working tree that reads as text."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        path = ROOT / name
        if not path.is_file():  # deleted in the working tree, or a submodule
            continue
        try:
            yield name, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def doc_sections():
    return [int(n) for n in HEADING.findall(DOC.read_text(encoding="utf-8"))]


def load_script():
    name = "benchmarks_tf1_vs_tf2"
    if name not in sys.modules:  # its dataclasses look their module up there
        spec = importlib.util.spec_from_file_location(name, SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def cited_sections(text):
    for match in CITATION.finditer(text):
        numbers = [int(n) for n in re.findall(r"\d+", match.group(1))]
        if "-" in match.group(1) and len(numbers) == 2:
            numbers = list(range(numbers[0], numbers[1] + 1))
        line = text.count("\n", 0, match.start()) + 1
        yield line, match.group(0), numbers


def test_citation_pattern_reads_the_forms_used():
    text = ("see docs/tf1-vs-tf2.md, section 8\n(docs/tf1-vs-tf2.md,\n    section 4)\n"
            "docs/tf1-vs-tf2.md sections 5 and 6; docs/tf1-vs-tf2.md, sections 1-3")
    assert [(line, numbers) for line, _, numbers in cited_sections(text)] == [
        (1, [8]), (2, [4]), (4, [5, 6]), (4, [1, 2, 3])]


def test_doc_has_the_ten_sections_in_order():
    assert doc_sections() == list(range(1, 11))


def test_every_citation_names_a_section_the_doc_has():
    sections = set(doc_sections())
    citing, missing = set(), []
    for name, text in tracked_texts():
        for line, cited, numbers in cited_sections(text):
            citing.add(name)
            missing += [f"{name}:{line}: {cited!r} (no section {n})" for n in numbers
                        if n not in sections]
    assert not missing, "citations of sections docs/tf1-vs-tf2.md does not have:\n" + "\n".join(missing)
    # the finding messages users see cite it, so the scan above read them
    # (the codes' documentation lives in the rules that report them)
    assert any(n.startswith("migrate/rules/") for n in citing) and "docs/codes.md" in citing, \
        sorted(citing)


def test_no_tracked_file_points_outside_the_project():
    found = []
    for name, text in tracked_texts():
        for pattern in OUTSIDE:
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{name}:{line}: {text.splitlines()[line - 1].strip()[:120]}")
    assert not found, "files citing notes outside the project:\n" + "\n".join(found)


def test_outside_patterns_match_what_they_are_for():
    samples = [f"({'gaps'}.md section 4)", f"see ../{'shared'}/notes", f"/work/{'shared'}/reference"]
    assert all(any(p.search(s) for p in OUTSIDE) for s in samples)
    assert not any(p.search("docs/tf1-vs-tf2.md, section 4; shared variables") for p in OUTSIDE)


def test_each_section_has_a_check_and_says_how_to_rerun_it():
    script = load_script()
    assert sorted(script.SECTIONS) == doc_sections()
    text = DOC.read_text(encoding="utf-8")
    bodies = re.split(r"^## \d+\. ", text, flags=re.MULTILINE)[1:]
    for n, body in enumerate(bodies, start=1):
        assert f"rerun: python benchmarks/tf1_vs_tf2.py --only {n}" in body, f"section {n}"
        assert re.search(rf"^\| {n} \| .+ \| (confirmed|NOT CONFIRMED)", body, re.MULTILINE), \
            f"section {n} shows no row the script measured"


def test_script_rejects_an_unknown_section(capsys):
    assert load_script().main(["--only", "12"]) == 2
    assert "no section 12 (sections are 1-10)" in capsys.readouterr().err


# -- slow: measured on the installed TensorFlow ------------------------------------------------

@pytest.mark.slow
@pytest.mark.tf
def test_measured_custom_gradient_facts_section_8():
    pytest.importorskip("tensorflow")
    rows = load_script().check(8)
    assert [r.confirmed for r in rows] == [True, True], rows
    override, custom = rows
    assert override.tf1.startswith("[-3, -3]") and "tape [3, 3], tf.function [3, 3]" in override.tf2
    assert custom.tf1 == "[-3, -3]" and custom.tf2 == "tape [-3, -3], tf.function [-3, -3]"


@pytest.mark.slow
@pytest.mark.tf
def test_measured_gradient_api_facts_section_2():
    pytest.importorskip("tensorflow")
    rows = {r.fact: r for r in load_script().check(2)}
    assert all(r.confirmed for r in rows.values()), list(rows.values())
    structure = rows["d(x*x)/dx at 3: returned structure"]
    assert (structure.tf1, structure.tf2) == ("list of 1: 6", "EagerTensor: 6")
    assert (rows["unconnected source z"].tf1, rows["unconnected source z"].tf2) == ("[3, None]",) * 2
    watch = rows["constant x as a source, no tape.watch"]
    assert (watch.tf1, watch.tf2) == ("6", "None")
    assert rows["tf.gradients called eagerly"].tf2.startswith(
        "RuntimeError: tf.gradients is not supported when eager execution is enabled")
