"""What the scripted API stand-ins share: an HTTP server on 127.0.0.1 at an ephemeral port, served
from a daemon thread, used as a context manager (``mock_responses`` for Codex, ``mock_messages`` for
Claude Code)."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedHandler(BaseHTTPRequestHandler):
    """A request handler for a stand-in: HTTP/1.1, silent, with ``_send`` for a whole answer."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *a: object) -> None:  # keep test output clean
        pass

    def _send(self, code: int, ctype: str, data: bytes) -> None:
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer:
    """Subclasses define :meth:`start`, which calls :meth:`serve` with their request handler."""

    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        raise NotImplementedError

    def serve(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]
