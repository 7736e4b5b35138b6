// Package server is the node agent's HTTPS API (port 10250), which only the
// API server calls; clients must present a certificate signed by the
// cluster CA. It serves:
//
//   - /healthz;
//   - /containerLogs/{namespace}/{pod}/{container}, from the container log
//     files the agent keeps under <data dir>/pods;
//   - /exec/{namespace}/{pod}/{container} (command=…, input, output, error,
//     tty), /attach/{namespace}/{pod}/{container} and
//     /portForward/{namespace}/{pod} (port=…), upstream's paths and
//     parameters: a Streamer (the agent) asks the container runtime for the
//     session's streaming URL, and the upgraded (SPDY or WebSocket)
//     connection is proxied to it unchanged;
//   - POST /run/{namespace}/{pod}/{container}?cmd=…, which runs a command
//     to its end and answers its output;
//   - /stats/summary, the agent's usage summary (Handler.Summary, package
//     stats).
package server
