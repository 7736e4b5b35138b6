// Package loopback connects in-process clients to the API server without a
// socket: an http.RoundTripper that calls the server's handler directly, with
// a fixed identity in the request context, so every request still passes
// authentication, authorization and admission (docs/architecture.md, rule 1). Responses
// stream, so watches work.
package loopback
