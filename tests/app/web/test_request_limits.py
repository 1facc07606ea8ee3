"""What one request may cost: bodies of too many JSON values, too deep or of a shape Dash does not
expect are one line; only two large bodies are taken in at once. Through the app's Flask server."""

from __future__ import annotations

import json

import pytest
from werkzeug.exceptions import ServiceUnavailable

from tilescope.app.web.request_limits import LARGE_BODIES_AT_ONCE, LARGE_BODY_BYTES, MAX_JSON_VALUES, BoundedJSON
from tilescope.app.web.server import create_app

from .panels.conftest import MODEL, TARGET


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("limits")
    return create_app(f"sqlite:///{tmp}/ui.db", MODEL, TARGET, job_dir=str(tmp / "jobs")).server


def _post(server, body: bytes):
    return server.test_client().post("/_dash-update-component", data=body, headers={"Content-Type": "application/json"})


def _one_line(response) -> str:
    text = response.get_data(as_text=True)
    assert response.content_type.startswith("text/plain") and text.count("\n") == 1
    assert text.startswith("tilescope: ") and "Traceback" not in text
    return text.strip()


def test_a_body_of_too_many_values_is_refused_before_it_is_parsed(server, capsys):
    response = _post(server, b"[" + b"{}," * MAX_JSON_VALUES + b"{}]")
    assert response.status_code == 413
    assert _one_line(response) == f"tilescope: the request holds over {MAX_JSON_VALUES:,} JSON values"
    assert capsys.readouterr().err.strip() == (
        f"tilescope: refused POST /_dash-update-component: the request holds over {MAX_JSON_VALUES:,} JSON values"
    )


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,  # past Python's recursion limit
        b"[]",
        b'{"output": 5}',
        b'{"output": "x.y", "inputs": "nope"}',
        b"not json",
        b"\xff\xfe",
    ],
)
def test_a_malformed_callback_body_is_one_line_in_the_answer_and_the_log(server, capsys, body):
    response = _post(server, body)
    assert 400 <= response.status_code < 500
    _one_line(response)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tilescope: refused POST") and "Traceback" not in err


def test_an_upload_is_one_value_however_large(server):
    """A model upload arrives as one base64 string: it is parsed whatever its size."""
    contents = "data:application/octet-stream;base64," + "QUJD" * (8 * 2**20)  # 32 MiB
    body = json.dumps({"inputs": [{"id": "upload", "property": "contents", "value": contents}]})
    assert isinstance(server.json, BoundedJSON)
    assert server.json.loads(body)["inputs"][0]["value"] == contents


def test_large_bodies_are_taken_in_at_most_two_at_once(server):
    big = {"environ_overrides": {"CONTENT_LENGTH": str(LARGE_BODY_BYTES + 1)}}
    contexts = [
        server.test_request_context("/_dash-update-component", method="POST", **big)
        for _ in range(LARGE_BODIES_AT_ONCE)
    ]
    for context in contexts:
        context.push()
        assert server.preprocess_request() is None  # admitted
    with server.test_request_context("/_dash-update-component", method="POST", **big):
        with pytest.raises(ServiceUnavailable, match=f"taking in {LARGE_BODIES_AT_ONCE} large requests already"):
            server.preprocess_request()
        small = server.test_request_context("/_dash-update-component", method="POST", data=b"{}")
        with small:
            assert server.preprocess_request() is None  # a click's callback is never held up by them
    for context in reversed(contexts):
        context.pop()  # the requests end: their places are free again
    again = [server.test_request_context("/_dash-update-component", method="POST", **big) for _ in contexts]
    for context in again:
        context.push()
        assert server.preprocess_request() is None
    for context in reversed(again):
        context.pop()
