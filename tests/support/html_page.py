"""A local HTTP server on 127.0.0.1 that answers every GET with one fixed HTML page:
a hostile site for the dashboard's CSRF test, a status port that is not JSON yet for the
Spark cluster's readiness poll. ``with HtmlPageServer(page) as site: site.port``."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class HtmlPageServer:
    def __init__(self, page: str) -> None:
        body = page.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "HtmlPageServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
