// Package audit writes the API server's audit log in upstream's format:
// one audit.k8s.io/v1 Event per request and stage (RequestReceived,
// ResponseStarted for watches and streams, ResponseComplete, Panic), as
// JSON lines, at the level upstream's Policy (read with upstream's policy
// package) gives the request — None, Metadata, Request (with the request's
// body) or RequestResponse (with the response's too) — less the stages the
// policy omits. The file is rotated by size (lumberjack, as upstream's log
// backend).
package audit
