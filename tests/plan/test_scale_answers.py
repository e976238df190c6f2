"""docs/scale.md's Answers table is what the sizing model gives now (``python -m benchmarks.scale_answers
--write-docs`` writes it)."""
from benchmarks import scale_answers


def test_the_docs_answers_are_the_models():
    with open(scale_answers.DOC, encoding="utf-8") as f:
        assert scale_answers.section(f.read()) == scale_answers.markdown()


def test_writing_the_table_needs_its_markers(tmp_path):
    doc = tmp_path / "scale.md"
    doc.write_text("no markers\n")
    try:
        scale_answers.write_doc("table", doc=str(doc))
    except ValueError as e:
        assert "plan:answers" in str(e)
    else:
        raise AssertionError("no error")
