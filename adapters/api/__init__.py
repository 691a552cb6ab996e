"""The HTTP API process (``kernelrank api``): the command set over HTTP with JSON, for the terminal client and the web.

It holds no state and never opens the database: each request becomes a ``Command`` sent to the core over NATS
(request-reply), carrying the SHA-256 of the request's personal token, and the core's ``Reply`` becomes the
response. A submission's progress and reports follow its own reply route (``Bus.follow_replies``), streamed as
server-sent events. Run several behind a TLS proxy if one is not enough.

Modules: ``app`` (the routes and the command each one sends), ``arguments`` (a command's arguments from a request,
checked against its registry entry), ``answers`` (replies and errors as HTTP responses, the event stream),
``limits`` (request sizes, enforced before a body is read), ``serve`` (uvicorn, NATS, start-up), and the web pages:
``web`` (their routes), ``web_common``, ``web_problem``, ``web_submit`` (docs/web.md).

Every request needs ``Authorization: Bearer <token>`` except ``GET /v1/health``. Errors are JSON,
``{"error": {"code": ..., "message": one sentence}}``, with the status the code implies: 400 invalid,
401 unauthenticated, 403 forbidden, 404 not_found, 413 too_large, 415 unsupported, 429 rate_limited (with
Retry-After), 500 internal, 503 unavailable.
"""
