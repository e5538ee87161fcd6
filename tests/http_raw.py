"""Test helper: raw bytes to an HTTP door, for requests no well-behaved client library would send."""

from __future__ import annotations

import json
import socket

# requests no HTTP parser accepts, sent as raw bytes (httpx would refuse to send them): a lowercase
# method, an unknown method, a request line far beyond the parser's limit, a header without a colon, and
# request lines plus headers beyond the 64 KB the HTTP doors accept
UNPARSABLE_REQUESTS = {
    "lowercase method": b"get /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "unknown method": b"FETCH /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "70 KB query": b"GET /health?q=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "header without colon": b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nbroken header\r\n\r\n",
    "200 KB header": b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n",
    "12,000 small headers": b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    + b"".join(b"X-%d: a\r\n" % number for number in range(12_000))
    + b"\r\n",
}


def raw_http(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are to a loopback port; the status, headers and body the server answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    return int(status_line.split()[1]), headers, body


def unparsable_answers(port: int) -> dict[str, tuple[int, str, str]]:
    """For each unparsable request: (status, content type, error code) of the answer."""
    answers = {}
    for name, request in UNPARSABLE_REQUESTS.items():
        status, headers, body = raw_http(port, request)
        answers[name] = (status, headers.get("content-type", ""), json.loads(body)["code"])
    return answers
