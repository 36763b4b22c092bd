"""The API reference page draws the OpenAPI as text: markup in a summary, path or example is shown, never run."""

from __future__ import annotations

from herald.api.reference import reference_page

HOSTILE = "<script>alert(1)</script>"


def test_markup_anywhere_in_the_document_is_escaped() -> None:
    spec = {
        "info": {"title": "Herald", "version": "1", "description": f"About {HOSTILE}"},
        "paths": {
            "/api/v1/x": {
                "post": {
                    "tags": ["app"],
                    "operationId": "x.post",
                    "summary": HOSTILE,
                    "parameters": [{"name": "q", "in": "query", "schema": {"type": "string", "description": HOSTILE}}],
                    "requestBody": {"content": {"application/json": {"example": {"text": HOSTILE}}}},
                    "responses": {"200": {"description": HOSTILE}},
                }
            }
        },
    }
    page = reference_page(spec)
    assert "<script" not in page
    # the description, the summary, the parameter, the example and the answer
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 5
    assert "&quot;text&quot;: &quot;&lt;script&gt;" in page  # the example, as JSON text
    assert "<span class=method>POST</span><code>/api/v1/x</code>" in page
