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
    assert page.count("<script") == 1 and "<script>alert" not in page  # only the page's own script
    # the description, the summary, the parameter, the example (shown, and in the try-it body) and the answer
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 6
    assert "&quot;text&quot;: &quot;&lt;script&gt;" in page  # the example, as JSON text
    assert "<span class=method>POST</span><code>/api/v1/x</code>" in page


SPEC = {
    "info": {
        "title": "Herald",
        "version": "1",
        "description": "Errors are **the envelope**.\n\n- one `code`\n- a [page](#app)",
    },
    "paths": {
        "/api/v1/things/{thing_id}": {
            "post": {
                "tags": ["app"],
                "operationId": "things.make",
                "summary": "Make a thing",
                "parameters": [
                    {"name": "thing_id", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 64}},
                    {"name": "page_size", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                ],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/ThingIn"},
                            "example": {"title": "a thing"},
                        }
                    }
                },
                "responses": {
                    "200": {"description": "Successful Response"},
                    "400": {"description": "INVALID_ARGUMENT"},
                    "413": {"description": "PAYLOAD_TOO_LARGE"},
                },
            }
        }
    },
    "components": {
        "schemas": {
            "ThingIn": {
                "title": "ThingIn",
                "type": "object",
                "required": ["title"],
                "properties": {
                    "title": {"type": "string", "minLength": 1, "maxLength": 256, "description": "what it is called"},
                    "owner": {"$ref": "#/components/schemas/Owner"},
                },
            },
            "Owner": {"type": "object", "properties": {"user_id": {"type": "string", "pattern": "^[0-9]+$"}}},
        }
    },
}


def test_the_descriptions_markdown_is_rendered_not_shown_raw() -> None:
    page = reference_page(SPEC)
    assert "<strong>the envelope</strong>" in page and "**" not in page
    assert "<li>one <code>code</code></li>" in page and "<a href='#app'>page</a>" in page


def test_each_operation_has_an_anchor_its_parameters_and_body_as_field_tables_with_limits() -> None:
    page = reference_page(SPEC)
    assert "id='things.make'" in page and "href='#things.make'" in page
    assert "<code>thing_id</code></td><td>path: string</td><td>required</td><td>at most 64 characters</td>" in page
    assert "<code>page_size</code></td><td>query: integer</td><td>optional</td><td>≥ 1; ≤ 100</td>" in page
    assert "<code>title</code></td><td>string</td><td>required</td><td>at least 1 characters; at most 256" in page
    assert "<code>owner.user_id</code></td><td>string</td><td>optional</td><td>matches ^[0-9]+$</td>" in page


def test_each_error_an_operation_can_answer_has_an_example_envelope() -> None:
    page = reference_page(SPEC)
    assert "<code>413</code> PAYLOAD_TOO_LARGE" in page and "&quot;code&quot;: &quot;PAYLOAD_TOO_LARGE&quot;" in page
    assert "&quot;field&quot;: &quot;body.title&quot;" in page  # a 400's example names its field


def test_the_try_it_form_is_there_and_the_one_script_is_the_one_the_csp_allows_by_hash() -> None:
    import base64
    import hashlib
    import re

    from herald.api.reference import CSP

    page = reference_page(SPEC)
    assert "<form class=try data-method='POST' data-path='/api/v1/things/{thing_id}'>" in page
    assert "<input name='thing_id' data-in='path' required>" in page and "<textarea name=body" in page
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in CSP and "connect-src 'self'" in CSP and "default-src 'none'" in CSP
